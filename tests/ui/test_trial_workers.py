"""The trial page of a multi-worker trial in a real browser: its Workers card lists the two
worker processes (rank, pid, state, heartbeat) while it runs, and its log lines show their
rank. A real master process with 2 CPU slots runs the framework-free 2-worker model of
tests/master/gang_model."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.master.e2e import MasterProcess, create_experiment, trials
from tests.waits import scaled

from .conftest import screenshot, signed_in_tab

pytestmark = [pytest.mark.browser, pytest.mark.slow]

GANG_MODEL = Path(__file__).parent.parent / "master" / "gang_model"
CONFIG = """
name: ui-workers
entrypoint: model_def:GangTrial
hyperparameters: {period: 5, step_seconds: 0.2}
searcher: {name: single, metric: val_loss, max_length: {batches: 100000}}
resources: {slots_per_trial: 2}
max_restarts: 0
"""


@pytest.fixture
def master(chromium_path: Path, tmp_path: Path) -> Iterator[MasterProcess]:
    process = MasterProcess(tmp_path / "master", cpu_slots=2).start()
    try:
        yield process
    finally:
        process.stop()


@pytest.fixture
def tab(browser: Browser, master: MasterProcess) -> Iterator[Page]:
    with signed_in_tab(browser, master) as tab:
        yield tab


def test_a_multi_worker_trial_page_lists_its_workers_and_ranked_logs(
    tab: Page, master: MasterProcess
) -> None:
    experiment_id = create_experiment(master.http, CONFIG, GANG_MODEL)
    deadline = time.monotonic() + scaled(90)
    workers: list[dict[str, object]] = []
    while time.monotonic() < deadline:
        found = trials(master.http, experiment_id)
        if found:
            trial_id = int(found[0]["id"])
            workers = master.http.get(f"/trials/{trial_id}/workers").json()
            if len(workers) == 2 and found[0]["total_batches"] > 0:
                break
        time.sleep(0.2)
    assert len(workers) == 2, master.log()[-3000:]
    tab.goto(f"{master.url}/#/trials/{trial_id}")
    card = tab.get_by_test_id("trial-workers")
    expect(card).to_be_visible()
    expect(card).to_contain_text("0 (chief)")
    for worker in workers:
        expect(card).to_contain_text(str(worker["pid"]))
    expect(card).to_contain_text("running")
    screenshot(tab, "trial-workers")
    tab.goto(f"{master.url}/#/trials/{trial_id}?tab=logs")
    expect(tab.get_by_test_id("log-rank").filter(has_text="[rank 1]").first).to_be_visible()
    master.http.post(f"/experiments/{experiment_id}/kill")
