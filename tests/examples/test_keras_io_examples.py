"""keras.io's examples as their users write them (examples/keras_io/: a convnet with
``validation_split``, a timeseries model with ModelCheckpoint + ReduceLROnPlateau +
EarlyStopping and ``load_model`` after ``fit``, a two-stage transfer-learning fine-tune, a
``tf.data`` text pipeline, a ``PyDataset``; their data made offline), each submitted unchanged
with its Determined 0.38-style config (``entrypoint: python3 train.py``, ``single``, no
``max_length``) to a real master over loopback: each completes, validates every epoch (its
rows carry the epochs), and its code after ``fit`` runs on the trained model (the line it
prints). Two of them, paused and activated mid-run and then their trial process SIGKILLed
(restarted by the master from the pause's checkpoint), end with the weights of the same
experiment run undisturbed, bitwise, and print the same after ``fit``."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil
import pytest

from tests.master.e2e import (
    MasterProcess,
    create_experiment,
    final_weights,
    logs,
    trials,
    wait_for,
    wait_trial,
)
from tests.waits import scaled

# Nine experiments on a master of two slots; a loaded machine needs more than the 600 s
# default for the module's first tests (they start the master and wait for the first runs).
pytestmark = [pytest.mark.slow, pytest.mark.timeout(1800)]

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "keras_io"


@dataclass(frozen=True)
class Example:
    epochs: int
    """The epochs its fit calls train (at most, where EarlyStopping may stop it)."""
    after: str
    """The line its code after fit prints, with the number it prints."""
    chance: float
    """The accuracy of an untrained model: the trained one's is well above it."""
    early_stopping: bool = False


EXAMPLE = {
    "mnist_convnet": Example(4, r"Test accuracy: ([0-9.e-]+)", 0.1),
    # Its best model is BatchNormalization's after a few epochs: less sure than the others'.
    "timeseries_classification": Example(
        12, r"Test accuracy ([0-9.e-]+)", 0.45, early_stopping=True
    ),
    "transfer_learning": Example(5, r"Test binary_accuracy: ([0-9.e-]+)", 0.5),
    "text_classification": Example(4, r"End-to-end test accuracy: ([0-9.e-]+)", 0.5),
    "pydataset": Example(4, r"Validation accuracy after training: ([0-9.e-]+)", 0.25),
}


@pytest.fixture(scope="module")
def master(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MasterProcess]:
    # Auth off (loopback only): these tests are about training, not signing in.
    process = MasterProcess(tmp_path_factory.mktemp("master"), env={"PEDL_AUTH": "false"}).start()
    try:
        yield process
    finally:
        process.stop()


@pytest.fixture(scope="module")
def submitted(master: MasterProcess) -> dict[str, int]:
    """Every example, submitted unchanged at once (the master runs two at a time)."""
    return {
        name: create_experiment(
            master.http, (EXAMPLES / name / "const.yaml").read_text(), EXAMPLES / name
        )
        for name in EXAMPLE
    }


def rows(master: MasterProcess, trial_id: int) -> list[dict[str, Any]]:
    response = master.http.get(f"/trials/{trial_id}/metrics")
    assert response.status_code == 200, response.text
    found: list[dict[str, Any]] = response.json()
    return found


def printed_after_fit(text: str, pattern: str) -> str:
    found = re.findall(pattern, text)
    assert found, f"the script's code after fit printed no {pattern!r}:\n{text[-3000:]}"
    return str(found[-1])


@pytest.mark.parametrize("name", list(EXAMPLE))
def test_the_example_completes_validating_every_epoch(
    master: MasterProcess, submitted: dict[str, int], name: str
) -> None:
    example = EXAMPLE[name]
    experiment_id = submitted[name]
    wait_for(master.http, experiment_id, {"COMPLETED"}, timeout=600, master=master)
    (trial,) = trials(master.http, experiment_id)
    metrics = rows(master, trial["id"])
    validations = [r for r in metrics if r["kind"] == "validation"]
    epochs = [r["total_epochs"] for r in validations]
    trained = len(epochs)
    if example.early_stopping:
        assert 1 < trained <= example.epochs
    else:
        assert trained == example.epochs
    assert epochs == [float(e) for e in range(1, trained + 1)]  # one validation per epoch
    trainings = [r for r in metrics if r["kind"] == "training"]
    assert [r["total_epochs"] for r in trainings] == epochs
    accuracy = float(printed_after_fit(logs(master.http, trial["id"]), example.after))
    assert accuracy > example.chance + 0.15, accuracy  # the trained model, not a fresh one


DISTURBED = {
    # example: (pause at this many of the trial's batches, SIGKILL at this many)
    "timeseries_classification": (30, 70),
    "transfer_learning": (20, 55),  # paused in the first fit (45 batches), killed in the second
}
SMALL_CHUNKS = "\nscheduling_unit: 1\nmax_restarts: 2\nreproducibility: {experiment_seed: 3}\n"
"""Appended to the configs of both runs: a chunk a batch, so that a pause is seen at once,
and the same seed (the same initial weights and shuffles)."""


@pytest.fixture(scope="module")
def references() -> dict[str, int]:
    """The undisturbed runs the disturbed ones are compared with, by example: each test
    submits its own first (it then runs beside the disturbed one)."""
    return {}


def reference_of(master: MasterProcess, references: dict[str, int], name: str) -> int:
    if name not in references:
        references[name] = create_experiment(
            master.http,
            (EXAMPLES / name / "const.yaml").read_text() + SMALL_CHUNKS,
            EXAMPLES / name,
        )
    return references[name]


def trial_pid(master: MasterProcess, trial_id: int) -> int:
    """The process the trial runs in (a warm worker's, which the trial's log names, or its
    own ``python -m pedl.exec.trial``)."""
    warm = re.findall(r"warm worker process (\d+)", logs(master.http, trial_id))
    if warm:
        return int(warm[-1])
    assert master.proc is not None
    for child in psutil.Process(master.proc.pid).children(recursive=True):
        with contextlib.suppress(psutil.Error):
            if "pedl.exec.trial" in child.cmdline() and child.environ().get("PEDL_TRIAL_ID") == str(
                trial_id
            ):
                return int(child.pid)
    raise AssertionError(f"no process runs trial {trial_id}")


@pytest.mark.parametrize("name", list(DISTURBED))
def test_paused_activated_and_killed_it_ends_as_undisturbed(
    master: MasterProcess, references: dict[str, int], name: str
) -> None:
    http = master.http
    pause_at, kill_at = DISTURBED[name]
    reference_id = reference_of(master, references, name)
    experiment_id = create_experiment(
        http, (EXAMPLES / name / "const.yaml").read_text() + SMALL_CHUNKS, EXAMPLES / name
    )
    (trial,) = wait_for_trials(master, experiment_id)
    trial_id = trial["id"]

    def running_past(batches: int) -> Any:
        return lambda t: t["state"] == "RUNNING" and t["total_batches"] >= batches

    wait_trial(http, trial_id, running_past(pause_at), timeout=600)
    assert http.post(f"/experiments/{experiment_id}/pause").status_code == 200
    paused = wait_trial(http, trial_id, lambda t: t["state"] == "PAUSED", timeout=120)
    assert pause_at <= paused["total_batches"] < kill_at, paused
    assert http.post(f"/experiments/{experiment_id}/activate").status_code == 200
    wait_trial(http, trial_id, running_past(kill_at), timeout=600)
    os.kill(trial_pid(master, trial_id), signal.SIGKILL)
    wait_for(http, experiment_id, {"COMPLETED"}, timeout=600, master=master)
    (done,) = trials(http, experiment_id)
    assert done["restarts"] == 1, done  # killed mid-run, not after the end
    text = logs(http, trial_id)
    assert "resumed from checkpoint" in text

    wait_for(http, reference_id, {"COMPLETED"}, timeout=600, master=master)
    (reference,) = trials(http, reference_id)
    checkpoints = master.home / "pedl" / "checkpoints"
    assert final_weights(checkpoints, done) == final_weights(checkpoints, reference)
    pattern = EXAMPLE[name].after
    assert printed_after_fit(text, pattern) == printed_after_fit(
        logs(http, reference["id"]), pattern
    )

    def summary(trial_id: int) -> list[tuple[Any, ...]]:
        return [
            (r["kind"], r["total_batches"], r["total_epochs"], r["metrics"])
            for r in rows(master, trial_id)
        ]

    assert summary(trial_id) == summary(reference["id"])


def wait_for_trials(master: MasterProcess, experiment_id: int) -> list[dict[str, Any]]:
    """The experiment's trials, once it has one."""
    deadline = time.monotonic() + scaled(60)
    while True:
        found = trials(master.http, experiment_id)
        if found:
            return found
        assert time.monotonic() < deadline, f"experiment {experiment_id} has no trial"
        time.sleep(0.1)
