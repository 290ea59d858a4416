"""The web UI's Determined-style actions in a real browser against a real master: archive,
unarchive, the list's "Archived too" filter, delete (confirmed), and the trial log's level
filter."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from tests.master.e2e import create_experiment, experiment, trials, wait_for

from .conftest import Experiments, config, screenshot

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def test_archive_unarchive_and_delete(page: Page, experiments: Experiments) -> None:
    http = experiments.master.http
    single = "{name: single, metric: val_loss, max_length: {batches: 20}}"
    experiment_id = create_experiment(
        http, config("ui-archive-me", single, lr="0.01"), activate=False
    )
    assert http.post(f"/experiments/{experiment_id}/kill").status_code == 200
    wait_for(http, experiment_id, {"CANCELED"}, timeout=60, master=experiments.master)

    page.goto(f"{experiments.url}/#/experiments/{experiment_id}")
    expect(page.get_by_test_id("action-unarchive")).to_be_hidden()
    page.get_by_test_id("action-archive").click()
    expect(page.get_by_test_id("action-unarchive")).to_be_visible()
    expect(page.get_by_test_id("action-archive")).to_be_hidden()
    assert experiment(http, experiment_id)["archived"] is True
    screenshot(page, "experiment-archived")

    row = page.locator(f"[data-testid=experiment-row][data-experiment-id='{experiment_id}']")
    page.goto(f"{experiments.url}/#/experiments")
    finished = page.locator(
        f"[data-testid=experiment-row][data-experiment-id='{experiments.finished}']"
    )
    expect(finished).to_be_visible()
    expect(row).to_have_count(0)
    page.get_by_test_id("filter-archived").check()
    expect(row).to_be_visible()

    page.goto(f"{experiments.url}/#/experiments/{experiment_id}")
    page.get_by_test_id("action-unarchive").click()
    expect(page.get_by_test_id("action-archive")).to_be_visible()
    assert experiment(http, experiment_id)["archived"] is False
    page.get_by_test_id("action-delete").click()
    page.get_by_test_id("confirm-yes").click()
    page.wait_for_url("**/#/experiments")
    assert http.get(f"/experiments/{experiment_id}").status_code == 404


def test_trial_log_level_filter(page: Page, experiments: Experiments) -> None:
    trial = trials(experiments.master.http, experiments.finished)[0]
    page.goto(f"{experiments.url}/#/trials/{trial['id']}?tab=logs")
    lines = page.get_by_test_id("log-line")
    expect(lines.first).to_be_visible()
    total = lines.count()
    page.get_by_test_id("log-level").select_option(label="ERROR and above")
    expect(page.locator(".log-tools")).to_contain_text(f"of {total:,} lines match")
    assert lines.count() < total
    assert all(
        "err" in (cls or "") for cls in lines.evaluate_all("(ls) => ls.map((l) => l.className)")
    )
    page.get_by_test_id("log-level").select_option(label="All levels")
    expect(lines).to_have_count(total)
