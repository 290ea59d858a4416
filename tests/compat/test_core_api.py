"""A framework-free script written as Determined 0.38's Core API documentation shows
(``models/det038_core_api``: metrics, ``store_path``/``restore_path`` checkpoints,
``should_preempt()``, hyperparameters from ``det.get_cluster_info()``) runs unchanged
through ``determined``: locally and on a real master, under ``single`` (the script decides its
length) and ``adaptive_asha`` (``time_metric``/``max_time``), each paused and activated
mid-run on the master. ``models/det038_core_api_parts`` checks the rest of the Core API a
script may use (cluster info fields, checkpoint upload/download/get_metadata, progress, ...)."""

from __future__ import annotations

import ast
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from pedl.local import LocalExperiment
from pedl.vocabulary import MetricKind
from tests import local_record as record
from tests.master.e2e import (
    MasterProcess,
    create_experiment,
    experiment,
    logs,
    metric_rows,
    trials,
    wait_for,
    wait_trial,
)
from tests.waits import scaled

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
    # The script sees the pause at its next should_preempt(), checkpoints and returns.
    while "stopped: PREEMPTED" not in logs(http, trial["id"]):
        assert time.monotonic() < deadline + 60, logs(http, trial["id"])
        time.sleep(0.1)
    paused_at = max(b for b, _ in validations(metric_rows(http, trial["id"])))
    assert paused_at == 10  # held at its first checkpoint until the pause came
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


def imported_modules(script: Path) -> set[str]:
    """The top-level modules ``script`` imports."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(script.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module is not None:
            names.add(node.module.split(".")[0])
    return names


@pytest.mark.slow
def test_adaptive_asha_paused_and_activated_mid_run_on_the_master(master: MasterProcess) -> None:
    """``asha_paused.yaml``: one bracket, rungs at 20, 40 and 80 batches (``max_time`` 80,
    divisor 2), 4 trials, 2 at a time, 0.1 s a step. The experiment is paused as soon as a
    trial runs: each trial running then is preempted at its first checkpoint (10 batches,
    short of every rung: the searcher has not closed it) and resumes from it once activated."""
    assert imported_modules(MODEL / "train.py") <= {
        "argparse",
        "logging",
        "os",
        "pathlib",
        "time",
        "determined",
    }, "the script is framework-free: no TensorFlow, no Keras"
    http = master.http
    experiment_id = create_experiment(http, (MODEL / "asha_paused.yaml").read_text(), MODEL)
    deadline = time.monotonic() + scaled(180)
    while not any(t["state"] == "RUNNING" for t in trials(http, experiment_id)):
        assert time.monotonic() < deadline, master.log()[-3000:]
        time.sleep(0.1)
    assert http.post(f"/experiments/{experiment_id}/pause").status_code == 200
    wait_for(http, experiment_id, {"PAUSED"}, master=master)
    while any(t["state"] == "RUNNING" for t in trials(http, experiment_id)):
        assert time.monotonic() < deadline, trials(http, experiment_id)
        time.sleep(0.2)
    assert all(t["state"] == "PAUSED" for t in trials(http, experiment_id))
    # The trials that had started (a trial not yet started when the pause came waits for
    # the activation): each trained to its first checkpoint, no further.
    paused = [t for t in trials(http, experiment_id) if "starting fresh" in logs(http, t["id"])]
    assert paused
    for trial in paused:
        assert "stopped: PREEMPTED" in logs(http, trial["id"]), logs(http, trial["id"])
        increment_by = trial["hparams"]["increment_by"]
        assert validations(metric_rows(http, trial["id"])) == [(10, 10 * increment_by)]
    # ASHA's progress: the share of trials that reported at the bottom rung (none yet).
    assert experiment(http, experiment_id)["progress"] == 0.0
    assert http.post(f"/experiments/{experiment_id}/activate").status_code == 200
    done = wait_for(http, experiment_id, {"COMPLETED"}, timeout=300, master=master)
    assert done["progress"] == 1.0
    found = trials(http, experiment_id)
    assert len(found) == 4
    length: dict[int, int] = {}
    for trial in found:
        text = logs(http, trial["id"])
        assert trial["state"] == "COMPLETED", text
        increment_by = trial["hparams"]["increment_by"]
        rows = validations(metric_rows(http, trial["id"]))
        length[trial["id"]] = last = max(b for b, _ in rows)
        # A rung's length exactly, each validation once, the step counter and x continued
        # across every restart: after the pause (at 10), after a promotion that came once
        # the trial's process had ended (at a rung).
        assert last in (20, 40, 80), rows
        assert rows == [(b, increment_by * b) for b in range(10, last + 1, 10)], text
        assert trial["outcome"] == ("COMPLETED" if last == 80 else "STOPPED_BY_SEARCHER"), trial
        resumed = [
            int(line.split("resumed at batch ", 1)[1].split()[0])
            for line in text.splitlines()
            if "resumed at batch " in line
        ]
        assert all(f"resumed at batch {b} (x={increment_by * b})" in text for b in resumed)
        assert set(resumed) <= {10, 20, 40}, text
        if trial["id"] in {t["id"] for t in paused}:
            assert resumed[0] == 10, text
    # ASHA's rules (pedl.searcher._asha): x at a rung is increment_by times its length, so
    # the best increment_by is promoted at every rung (ties: the earlier report) and trains to
    # max_time; the 2 best of the 4 results at the bottom rung reach the second; with at
    # most 3 promoted from the bottom, at least one trial stops there.
    by_increment = sorted(found, key=lambda t: -t["hparams"]["increment_by"])
    best = by_increment[0]["hparams"]["increment_by"]
    assert any(length[t["id"]] == 80 for t in found if t["hparams"]["increment_by"] == best), length
    second = by_increment[1]["hparams"]["increment_by"]
    assert all(length[t["id"]] >= 40 for t in found if t["hparams"]["increment_by"] > second)
    assert sum(1 for n in length.values() if n >= 40) >= 2, length
    assert 20 in length.values() and 80 in length.values(), length


PARTS = Path(__file__).parent / "models" / "det038_core_api_parts"


@pytest.mark.slow
def test_the_other_parts_of_the_core_api_locally(tmp_path: Path) -> None:
    """``models/det038_core_api_parts``: cluster info fields, checkpoint upload, download and
    get_metadata with 0.38's relative-path selectors, report_progress's range,
    report_metrics' groups, set_status, get_configured_units (its script checks each)."""
    experiment = LocalExperiment.create(PARTS / "const.yaml", PARTS, tmp_path)
    summary = experiment.run()
    experiment.close()
    assert summary.state == "COMPLETED", [t.error for t in summary.trials]
    (trial,) = record.trials(experiment.directory)
    rows = record.metric_rows(experiment.directory, trial.id, MetricKind.VALIDATION)
    assert [(b, m) for _, b, m in rows] == [(2, {"checks": 1.0})]


@pytest.mark.slow
def test_the_other_parts_of_the_core_api_on_the_master(master: MasterProcess) -> None:
    http = master.http
    experiment_id = create_experiment(http, (PARTS / "const.yaml").read_text(), PARTS)
    wait_for(http, experiment_id, {"COMPLETED"}, timeout=240, master=master)
    (trial,) = trials(http, experiment_id)
    text = logs(http, trial["id"])
    assert "all Core API checks passed" in text, text
    assert [(k, b, m) for k, b, m in metric_rows(http, trial["id"]) if k == "validation"] == [
        ("validation", 2, {"checks": 1.0})
    ]
