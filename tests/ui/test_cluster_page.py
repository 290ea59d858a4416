"""The Cluster page in Chromium against a real master of its own (issue 35, point 4): the
workers it keeps ready for trials, each holding a slot while idle (a spare, and the warm
worker an experiment's trial ran in), and the TensorBoards it runs, beside the slots and the
trials."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.master.e2e import MasterProcess, create_experiment, trials, wait_for
from tests.waits import scaled

from .conftest import PAGE_TIMEOUT_MS, config, screenshot, sign_in_context

pytestmark = [pytest.mark.browser, pytest.mark.slow]


@pytest.fixture
def master(chromium_path: Path, tmp_path: Path) -> Iterator[MasterProcess]:
    """A master of two slots that keeps one spare worker (the other tests' masters keep
    none: tests/conftest.py)."""
    started = MasterProcess(tmp_path, cpu_slots=2, env={"PEDL_SPARE_WORKERS": "1"}).start()
    try:
        yield started
    finally:
        started.stop()


@contextmanager
def _signed_in(browser: Browser, master: MasterProcess) -> Iterator[Page]:
    """A tab signed in to ``master`` as its administrator."""
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    context.set_default_timeout(PAGE_TIMEOUT_MS)
    sign_in_context(context, master)
    try:
        yield context.new_page()
    finally:
        context.close()


def _wait(condition: Any, what: str, timeout: float = 120) -> Any:
    deadline = time.monotonic() + scaled(timeout)
    while not (value := condition()):
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.25)
    return value


def test_the_workers_kept_ready_and_the_tensorboards(
    browser: Browser, master: MasterProcess
) -> None:
    http = master.http
    single = "{name: single, metric: val_loss, max_length: {batches: 10}}"
    experiment_id = create_experiment(http, config("ui-cluster", single, lr="0.01"))
    wait_for(http, experiment_id, {"COMPLETED"}, timeout=300, master=master)
    (trial,) = trials(http, experiment_id)
    # Its trial ran in the spare, now the experiment's idle warm worker; a new spare is started.
    _wait(lambda: len(http.get("/cluster").json()["idle_workers"]) == 2, "two idle workers")
    started = http.post("/tensorboards", json={"experiment_ids": [experiment_id]})
    assert started.status_code == 201, started.text
    board = started.json()
    errors: list[str] = []
    try:
        with _signed_in(browser, master) as page:
            page.on("pageerror", lambda err: errors.append(str(err)))
            page.goto(f"{master.url}/#/cluster")
            expect(page.get_by_test_id("cluster-slots")).to_contain_text(
                "0 of 2 slots in use, 2 held by workers kept ready"
            )
            expect(page.locator(".slot.ready")).to_have_count(2)
            card = page.get_by_test_id("cluster-idle-workers")
            expect(card.get_by_role("heading")).to_have_text("Workers kept ready (2)")
            workers = card.get_by_test_id("idle-worker")
            expect(workers).to_have_count(2)
            warm = workers.filter(has_text=f"Experiment {experiment_id}")
            expect(warm).to_contain_text(f"(ran trial {trial['id']})")
            expect(warm.get_by_role("link")).to_have_attribute(
                "href", f"#/experiments/{experiment_id}"
            )
            expect(workers.filter(has_text="Spare: any new experiment")).to_have_count(1)
            boards = page.get_by_test_id("cluster-tensorboards")
            expect(boards.get_by_role("heading")).to_have_text("TensorBoards (1)")
            row = boards.get_by_test_id("tensorboard-row")
            expect(row).to_have_count(1)
            expect(row).to_contain_text(board["id"])
            expect(row).to_contain_text(f"Experiment {experiment_id}")
            expect(row).to_contain_text("admin")
            expect(row.get_by_role("link", name=board["id"])).to_have_attribute(
                "href", board["service_address"]
            )
            screenshot(page, "cluster-workers-tensorboards")
            # Killed: it leaves the page at the next poll.
            assert http.post(f"/tensorboards/{board['id']}/kill").status_code == 200
            expect(boards.get_by_role("heading")).to_have_text("TensorBoards (0)")
            expect(boards).to_contain_text("No TensorBoard runs")
    finally:
        http.post(f"/tensorboards/{board['id']}/kill")
    assert errors == [], errors
