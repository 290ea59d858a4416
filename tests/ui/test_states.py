"""The states the web UI shows are the API's, within one poll, in an adaptive search driven
in a real browser: after Pause and Activate the searcher card's counts are the API's; while
ASHA runs, a trial is never shown in a state (RUNNING above all) the API left more than one
poll interval earlier, and one whose process exited after a rung reads "waiting for the
searcher" beside ACTIVE; at the end each trial shows its outcome beside its state, the ones
ASHA stopped at the lower rung "stopped by the searcher". A real master process (2 CPU slots)
trains the tiny model of tests/master/trial_model."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Browser, Page, expect

from tests.master.e2e import MasterProcess, create_experiment, experiment, trials
from tests.waits import scaled, scaled_ms

from .conftest import screenshot, signed_in_tab

pytestmark = [pytest.mark.browser, pytest.mark.slow]

POLL_S = 3.0
"""The experiment page's poll interval (ui/src/pages/experiment*.ts)."""
SLACK_S = scaled(4.0)
"""Time for one request and a render on a loaded 2-core machine, beyond the interval: work,
so :func:`~tests.waits.scaled` (the interval is not)."""

ASHA = """
name: ui-states-asha
hyperparameters:
  global_batch_size: 16
  lr: {type: log, base: 10, minval: -4, maxval: -1}
searcher:
  name: async_halving
  metric: val_accuracy
  smaller_is_better: false
  num_rungs: 2
  divisor: 2
  max_trials: 4
  max_concurrent_trials: 2
  max_length: {batches: 20}
scheduling_unit: 5
min_validation_period: {batches: 5}
min_checkpoint_period: {batches: 5}
reproducibility: {experiment_seed: 22}
environment:
  environment_variables: [PEDL_TEST_SLEEP=0.1]
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
    with signed_in_tab(browser, master, timeout_ms=scaled_ms(30)) as tab:
        yield tab


def _shown_counts(page: Page) -> dict[str, int]:
    return {
        str(item["state"]): int(item["count"])
        for item in page.get_by_test_id("state-count").evaluate_all(
            "(items) => items.map((i) => ({state: i.dataset.state, count: i.dataset.count}))"
        )
    }


def _counts_settle(
    page: Page, http: httpx.Client, experiment_id: int, settled: Callable[[dict[str, int]], bool]
) -> None:
    """Wait until the API's trial counts are ``settled`` (the trials have followed the
    experiment's new state); then, within one poll (and the slack), the UI must show settled
    counts that the API held at most one poll (and the slack) before (the trials move on:
    after Activate from ACTIVE to QUEUED to RUNNING)."""
    deadline = time.monotonic() + scaled(90)
    while not settled(counts := experiment(http, experiment_id)["trial_counts"]):
        assert time.monotonic() < deadline, counts
        time.sleep(0.2)
    held = [(time.monotonic(), counts)]
    shown: dict[str, int] = {}
    until = held[0][0] + POLL_S + SLACK_S
    while time.monotonic() < until:
        shown = _shown_counts(page)
        now = time.monotonic()
        recent = [c for at, c in held if now - at <= POLL_S + SLACK_S]
        if settled(shown) and shown in recent:
            return
        held.append((time.monotonic(), experiment(http, experiment_id)["trial_counts"]))
        time.sleep(0.2)
    raise AssertionError(f"the UI shows {shown} one poll after the API held {held}")


def _waiting_spans(samples: list[tuple[float, str]]) -> list[tuple[float, float]]:
    """The (first, last) sample times of each run of consecutive WAITING samples."""
    spans: list[tuple[float, float]] = []
    start: float | None = None
    last = 0.0
    for at, state in [*samples, (float("inf"), "")]:
        if state == "WAITING":
            start = at if start is None else start
            last = at
        elif start is not None:
            spans.append((start, last))
            start = None
    return spans


def test_an_adaptive_search_shows_the_apis_states_within_one_poll(
    tab: Page, master: MasterProcess
) -> None:
    http = master.http
    experiment_id = create_experiment(http, ASHA)
    tab.goto(f"{master.url}/#/experiments/{experiment_id}")
    deadline = time.monotonic() + scaled(120)
    while not any(t["state"] == "RUNNING" for t in trials(http, experiment_id)):
        assert time.monotonic() < deadline, master.log()[-3000:]
        time.sleep(0.2)

    # Pause: the header and the searcher card's counts follow the API within one poll.
    tab.get_by_test_id("action-pause").click()
    expect(tab.get_by_test_id("experiment-state")).to_have_attribute("data-state", "PAUSED")
    _counts_settle(tab, http, experiment_id, lambda c: set(c) <= {"PAUSED", "COMPLETED"})
    tab.get_by_test_id("action-activate").click()
    expect(tab.get_by_test_id("experiment-state")).to_have_attribute("data-state", "ACTIVE")
    _counts_settle(tab, http, experiment_id, lambda c: "PAUSED" not in c)

    # The trials table while ASHA runs: every state shown is one the API held at most one
    # poll (and the slack) before; an ACTIVE trial reads "waiting for the searcher" exactly
    # when the API held it ACTIVE after training (its process exited after a rung), so no
    # trial whose process exited is shown as a plain ACTIVE one.
    tab.goto(f"{master.url}/#/experiments/{experiment_id}/trials")
    history: dict[int, list[tuple[float, str]]] = {}
    shown_log: list[tuple[float, int, str]] = []
    deadline = time.monotonic() + scaled(240)
    while True:
        now = time.monotonic()
        api = trials(http, experiment_id)
        for t in api:
            waiting = t["state"] == "ACTIVE" and t["total_batches"] > 0
            history.setdefault(t["id"], []).append((now, "WAITING" if waiting else t["state"]))
        rows = tab.get_by_test_id("trial-row").evaluate_all(
            """(rows) => rows.map((r) => ({
                id: Number(r.dataset.trialId),
                state: r.querySelector('[data-testid=trial-state]')?.dataset.state,
                note: r.querySelector('[data-testid=outcome-note]')?.textContent ?? null,
            }))"""
        )
        seen = time.monotonic()
        for row in rows:
            state = str(row["state"])
            if state == "ACTIVE" and row["note"] == "waiting for the searcher":
                state = "WAITING"
            shown_log.append((seen, int(row["id"]), state))
        if experiment(http, experiment_id)["state"] == "COMPLETED":
            break
        assert now < deadline, master.log()[-3000:]
        time.sleep(0.5)
    for seen, trial_id, state in shown_log:
        samples = history.get(trial_id, [])
        held = [at for at, api_state in samples if api_state == state and at <= seen]
        if not held and state == "QUEUED":
            # A trial can be created and start between two of the test's samples (half a
            # second apart): the API held its first state, QUEUED, until at most its first
            # sample, which is when the one-poll bound starts.
            held = [samples[0][0] if samples else seen]
        assert held and seen - max(held) <= POLL_S + SLACK_S, (
            f"trial {trial_id} shown {state} at {seen:.1f}, "
            f"the API's states (WAITING: ACTIVE after training): {history.get(trial_id)}"
        )
    # ASHA's lower rung holds a trial until another one reports there: the API holds it
    # waiting, and the UI shows it waiting whenever the API held it so for longer than one
    # poll and the slack (a shorter wait, which a loaded machine can make, no poll need see).
    waits = [(t, *span) for t, samples in history.items() for span in _waiting_spans(samples)]
    assert waits, history
    for trial_id, start, end in waits:
        if end - start > POLL_S + SLACK_S:
            assert any(
                (shown_id, state) == (trial_id, "WAITING")
                and start <= seen <= end + POLL_S + SLACK_S
                for seen, shown_id, state in shown_log
            ), (trial_id, start, end, shown_log)

    # The end: every trial's state and outcome as the API holds them.
    final = {t["id"]: t for t in trials(http, experiment_id)}
    assert {t["state"] for t in final.values()} == {"COMPLETED"}
    stopped = [i for i, t in final.items() if t["outcome"] == "STOPPED_BY_SEARCHER"]
    assert stopped, final  # ASHA promoted only the best of the lower rung
    rows = tab.get_by_test_id("trial-row")
    expect(rows).to_have_count(len(final))
    for trial_id, trial in final.items():
        row = tab.locator(f"[data-testid=trial-row][data-trial-id='{trial_id}']")
        expect(row.get_by_test_id("trial-state")).to_have_attribute("data-state", "COMPLETED")
        note = row.get_by_test_id("outcome-note")
        if trial["outcome"] == "STOPPED_BY_SEARCHER":
            expect(note).to_have_text("stopped by the searcher")
        else:
            expect(note).to_have_count(0)  # a plain COMPLETED: its state says it all
    badge = tab.locator(f"[data-testid=trial-row][data-trial-id='{stopped[0]}']").get_by_test_id(
        "trial-state"
    )
    assert "no process" not in (badge.get_attribute("title") or "")
    assert "Ended" in (badge.get_attribute("title") or "")  # its tooltip says what it means
    screenshot(tab, "asha-states")
