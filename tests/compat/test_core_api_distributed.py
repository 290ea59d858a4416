"""Determined 0.38's framework-free Core API on several workers and with a reported
``time_metric`` (``models/det038_core_api_distributed``, the form of 0.38's distributed
tutorial): on a real master, 2 slots, the script's own launcher starts its workers through
``determined.launch.wrap_rank``; they join the trial's context, their ``allgather``,
``broadcast`` and ``gather`` give the right results, only the chief's metrics are recorded,
and paused and activated mid-run the trial resumes from its checkpoint. ``adaptive_asha`` with
``time_metric`` naming a validation metric the script reports (not batches) and ``max_time``
in its units completes, locally and on the master, each trial stopped at a rung or trained to
``max_time``."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from pedl.local import LocalExperiment
from pedl.vocabulary import MetricKind
from tests import local_record as record
from tests.master.e2e import (
    MasterProcess,
    create_experiment,
    logs,
    metric_rows,
    trials,
    wait_for,
    wait_trial,
)
from tests.waits import scaled

pytestmark = pytest.mark.slow

MODEL = Path(__file__).parent / "models" / "det038_core_api_distributed"


@pytest.fixture(scope="module")
def master(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MasterProcess]:
    process = MasterProcess(tmp_path_factory.mktemp("master"), env={"PEDL_AUTH": "false"}).start()
    try:
        yield process
    finally:
        process.stop()


def validations(http: httpx.Client, trial_id: int) -> list[tuple[int, float, float]]:
    return [
        (b, m["x"], m["samples"])
        for kind, b, m in metric_rows(http, trial_id)
        if kind == "validation"
    ]


def test_two_slots_with_the_scripts_own_launcher_paused_and_activated(
    master: MasterProcess,
) -> None:
    http = master.http
    config = (MODEL / "distributed.yaml").read_text()
    config += "environment:\n  environment_variables: [PEDL_TEST_HOLD_FOR_PAUSE=1]\n"
    experiment_id = create_experiment(http, config, MODEL)
    deadline = time.monotonic() + scaled(60)
    while not trials(http, experiment_id):
        assert time.monotonic() < deadline, master.log()[-3000:]
        time.sleep(0.1)
    (trial,) = trials(http, experiment_id)
    wait_trial(http, trial["id"], lambda t: t.get("latest_checkpoint_uuid"), timeout=120)
    assert http.post(f"/experiments/{experiment_id}/pause").status_code == 200
    wait_for(http, experiment_id, {"PAUSED"}, master=master)
    while "stopped: PREEMPTED" not in logs(http, trial["id"]):
        assert time.monotonic() < deadline + 60, logs(http, trial["id"])
        time.sleep(0.1)
    paused_at = max(b for b, _, _ in validations(http, trial["id"]))
    assert paused_at == 10  # held at its first checkpoint until the pause came
    assert http.post(f"/experiments/{experiment_id}/activate").status_code == 200
    wait_for(http, experiment_id, {"COMPLETED"}, timeout=240, master=master)
    (trial,) = trials(http, experiment_id)
    text = logs(http, trial["id"])
    assert trial["state"] == "COMPLETED", text
    # Two workers each add increment_by (3) every step: x = 6 per step; only the chief's
    # reports are recorded, once each.
    assert validations(http, trial["id"]) == [(b, 6 * b, 8 * b) for b in range(10, 70, 10)]
    assert f"resumed at batch {paused_at} (x={6 * paused_at})" in text
    for rank in (0, 1):
        # wrap_rank's prefix: each worker's lines are its own (one per start: two here)
        said = [
            line.split("allgather ", 1)[1]
            for line in text.splitlines()
            if line.startswith(f"[rank={rank}] ") and "allgather " in line
        ]
        assert said == ["[[0, 3], [1, 3]] broadcast hello from rank 0"] * 2, said
    assert "gathered ranks [0, 1]" in text


def test_adaptive_asha_with_a_reported_time_metric_locally(tmp_path: Path) -> None:
    experiment = LocalExperiment.create(MODEL / "adaptive.yaml", MODEL, tmp_path)
    summary = experiment.run()
    experiment.close()
    assert summary.state == "COMPLETED", [t.error for t in summary.trials]
    found = record.trials(experiment.directory)
    assert len(found) == 4
    last = []
    for trial in found:
        rows = record.metric_rows(experiment.directory, trial.id, MetricKind.VALIDATION)
        assert all(m["samples"] == 8 * b for _, b, m in rows), rows
        last.append(max(b for _, b, _ in rows))
    # The first rung is at 200 samples (max_time 800 / divisor 4): the validation at 30
    # steps (240 samples) reaches it, and a trial not promoted stops there (batches would
    # have put it at step 200, past the script's 100); at least one trains to max_time.
    assert set(last) <= {30, 100} and 100 in last and 30 in last, last


def test_adaptive_asha_with_a_reported_time_metric_on_the_master(master: MasterProcess) -> None:
    """As locally: the master's searcher reads the lengths in the reported ``samples``."""
    http = master.http
    experiment_id = create_experiment(http, (MODEL / "adaptive.yaml").read_text(), MODEL)
    done = wait_for(http, experiment_id, {"COMPLETED"}, timeout=300, master=master)
    assert done["progress"] == 1.0
    found = trials(http, experiment_id)
    assert len(found) == 4
    last = {}
    for trial in found:
        assert trial["state"] == "COMPLETED", logs(http, trial["id"])
        rows = validations(http, trial["id"])
        assert all(samples == 8 * b for b, _, samples in rows), rows
        last[trial["id"]] = max(b for b, _, _ in rows)
        # samples at the last validation: 240 at the first rung (200), 800 at max_time
        want = "COMPLETED" if last[trial["id"]] == 100 else "STOPPED_BY_SEARCHER"
        assert trial["outcome"] == want, (trial, rows)
    assert set(last.values()) <= {30, 100} and 100 in last.values() and 30 in last.values(), last
