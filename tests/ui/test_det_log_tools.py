"""The trial log page's worker (rank) filter beside its level filter, and the download of the
lines shown, in a real browser against a real master."""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from pedl.db import logs as logs_repo
from tests.master.e2e import trials

from .conftest import Experiments, master_database

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def test_rank_filter_and_download(page: Page, experiments: Experiments, tmp_path: Path) -> None:
    trial = trials(experiments.master.http, experiments.finished)[-1]
    database = master_database(experiments.master)
    try:
        with database.session(write=True) as session:
            logs_repo.append_logs(
                session,
                trial["id"],
                [
                    logs_repo.LogLine(seq=900_000 + n, message=f"worker {rank} says {n}", rank=rank)
                    for n, rank in enumerate((0, 1, 1))
                ],
            )
    finally:
        database.dispose()
    page.goto(f"{experiments.url}/#/trials/{trial['id']}?tab=logs")
    lines = page.get_by_test_id("log-line")
    expect(lines.last).to_contain_text("worker 1 says 2")
    total = lines.count()
    ranks = page.get_by_test_id("log-rank-filter")
    expect(ranks).to_be_visible()
    ranks.select_option(label="Rank 1")
    expect(lines).to_have_count(2)
    expect(page.locator(".log-tools")).to_contain_text(f"2 of {total:,} lines match")
    with page.expect_download() as download:
        page.get_by_test_id("log-download").click()
    saved = tmp_path / "logs.txt"
    download.value.save_as(saved)
    assert download.value.suggested_filename == f"trial-{trial['id']}-logs.txt"
    assert saved.read_text() == "worker 1 says 1\nworker 1 says 2\n"
    ranks.select_option(label="All workers")
    expect(lines).to_have_count(total)
    with page.expect_download() as everything:
        page.get_by_test_id("log-download").click()
    everything.value.save_as(saved)
    stored = experiments.master.http.get(f"/trials/{trial['id']}/logs", params={"limit": 10_000})
    assert saved.read_text() == "".join(f"{line['message']}\n" for line in stored.json())

    other = trials(experiments.master.http, experiments.errored)[0]
    page.goto(f"{experiments.url}/#/trials/{other['id']}?tab=logs")
    expect(page.get_by_test_id("log-line").first).to_be_visible()
    expect(page.get_by_test_id("log-rank-filter")).to_be_hidden()  # one process: no workers to pick
