"""A framework-free script written as Determined 0.38's Core API documentation shows
(``models/det038_core_api``: metrics, ``store_path``/``restore_path`` checkpoints,
``should_preempt()``, hyperparameters from ``det.get_cluster_info()``) runs unchanged
through ``determined``: locally and on a real master, under ``single`` (the script decides its
length) and ``adaptive_asha`` (``time_metric``/``max_time``), paused and activated mid-run."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from pedl.engine import MetricKind
from pedl.local import LocalExperiment
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

MODEL = Path(__file__).parent / "models" / "det038_core_api"


def validations(rows: list[tuple[str, int, dict[str, float]]]) -> list[tuple[int, float]]:
    return [(b, m["x"]) for kind, b, m in rows if kind == "validation"]


@pytest.mark.slow
def test_single_runs_for_the_scripts_own_length_locally(tmp_path: Path) -> None:
    experiment = LocalExperiment.create(MODEL / "const.yaml", MODEL, tmp_path)
    summary = experiment.run()
    experiment.close()
    assert summary.state == "COMPLETED", [t.error for t in summary.trials]
    (trial,) = record.trials(experiment.directory)
    rows = record.metric_rows(experiment.directory, trial.id, MetricKind.VALIDATION)
    assert [(b, m["x"], m["batches"]) for _, b, m in rows] == [
        (10, 30, 10),
        (20, 60, 20),
        (30, 90, 30),
        (40, 120, 40),
    ]


@pytest.mark.slow
def test_adaptive_asha_with_time_metric_locally(tmp_path: Path) -> None:
    experiment = LocalExperiment.create(MODEL / "adaptive.yaml", MODEL, tmp_path)
    summary = experiment.run()
    experiment.close()
    assert summary.state == "COMPLETED", [t.error for t in summary.trials]
    found = record.trials(experiment.directory)
    assert len(found) == 4
    last = {
        t.id: max(
            b for _, b, _ in record.metric_rows(experiment.directory, t.id, MetricKind.VALIDATION)
        )
        for t in found
    }
    # Stopped at the first rung (25 batches; the script validates every 10) or trained to
    # max_time; at least one trial was promoted to the top.
    assert set(last.values()) <= {20, 100} and 100 in last.values(), last


@pytest.fixture(scope="module")
def master(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MasterProcess]:
    process = MasterProcess(tmp_path_factory.mktemp("master"), env={"PEDL_AUTH": "false"}).start()
    try:
        yield process
    finally:
        process.stop()


@pytest.mark.slow
def test_single_paused_and_activated_mid_run_on_the_master(master: MasterProcess) -> None:
    http = master.http
    config = (MODEL / "const.yaml").read_text().replace("--steps 40", "--steps 60")
    config += "environment:\n  environment_variables: [PEDL_TEST_STEP_DELAY=0.05]\n"
    experiment_id = create_experiment(http, config, MODEL)
    deadline = time.monotonic() + 60
    while not trials(http, experiment_id):
        assert time.monotonic() < deadline, master.log()[-3000:]
        time.sleep(0.1)
    (trial,) = trials(http, experiment_id)
    wait_trial(http, trial["id"], lambda t: t.get("latest_checkpoint_uuid"), timeout=120)
    assert http.post(f"/experiments/{experiment_id}/pause").status_code == 200
    wait_for(http, experiment_id, {"PAUSED"}, master=master)
    # The script sees the pause at its next should_preempt(), checkpoints and returns.
    while "stopped: PREEMPTED" not in logs(http, trial["id"]):
        assert time.monotonic() < deadline + 60, logs(http, trial["id"])
        time.sleep(0.1)
    paused_at = max(b for b, _ in validations(metric_rows(http, trial["id"])))
    assert paused_at < 60
    assert http.post(f"/experiments/{experiment_id}/activate").status_code == 200
    wait_for(http, experiment_id, {"COMPLETED"}, timeout=240, master=master)
    (trial,) = trials(http, experiment_id)
    assert trial["state"] == "COMPLETED", logs(http, trial["id"])
    assert validations(metric_rows(http, trial["id"])) == [(b, 3 * b) for b in range(10, 70, 10)]
    assert f"resumed at batch {paused_at} (x={3 * paused_at})" in logs(http, trial["id"])


@pytest.mark.slow
def test_adaptive_asha_on_the_master(master: MasterProcess) -> None:
    http = master.http
    experiment_id = create_experiment(http, (MODEL / "adaptive.yaml").read_text(), MODEL)
    wait_for(http, experiment_id, {"COMPLETED"}, timeout=300, master=master)
    found = trials(http, experiment_id)
    assert len(found) == 4
    assert all(t["state"] == "COMPLETED" for t in found), found
    last = [max(b for b, _ in validations(metric_rows(http, t["id"]))) for t in found]
    assert set(last) <= {20, 100} and 100 in last, last
