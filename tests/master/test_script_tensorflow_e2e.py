"""End to end on a real master: a simple model definition (a script that calls ``fit()``)
and a TensorFlowTrial, each SIGKILLed mid-chunk (after batch 11; the latest checkpoint is at
batch 8) and restarted by the master. The restarted trial's final checkpoint is bitwise equal
to that of the same experiment run undisturbed in local mode (in this process), and its
metric rows are the same."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pedl.local import LocalExperiment
from tests import local_record as record
from tests.script.test_script_local import FIT_MODEL
from tests.tensorflow.test_tensorflow_local import MODEL as TF_MODEL

from .e2e import MasterProcess, create_experiment, logs, metric_rows, trials, wait_for

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def master(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MasterProcess]:
    # Auth off (loopback only): these tests are about training, not signing in.
    process = MasterProcess(tmp_path_factory.mktemp("master"), env={"PEDL_AUTH": "false"}).start()
    try:
        yield process
    finally:
        process.stop()


def config(model: Path, name: str, env: list[str]) -> str:
    text = (model / "const.yaml").read_text()
    return f"{text}\nmax_restarts: 2\nenvironment:\n  environment_variables: {env}\n".replace(
        "name: ", f"name: {name}-", 1
    )


FORMS = {
    "script": (FIT_MODEL, "state/variables.bin"),
    "tensorflow": (TF_MODEL, "model/model.ckpt.data-00000-of-00001"),
}


@pytest.fixture(scope="module")
def killed(
    master: MasterProcess, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, tuple[int, Path]]:
    """Per form: the experiment whose trial is killed, and the kill's marker file."""
    created = {}
    for form, (model, _) in FORMS.items():
        marker = tmp_path_factory.mktemp(form) / "killed"
        env = ["PEDL_TEST_KILL_AT_BATCH=11", f"PEDL_TEST_MARKER={marker}"]
        experiment_id = create_experiment(master.http, config(model, "killed", env), model)
        created[form] = (experiment_id, marker)
    return created


def undisturbed(model: Path, tmp_path: Path, state_file: str) -> tuple[bytes, list[Any]]:
    """The final state file and metric rows of an undisturbed local run."""
    experiment = LocalExperiment.create(model / "const.yaml", model, tmp_path)
    try:
        assert experiment.run().state == "COMPLETED"
    finally:
        experiment.close()
    (trial,) = record.trials(experiment.directory)
    assert trial.latest_checkpoint_uuid is not None
    checkpoint = experiment.directory / "checkpoints" / trial.latest_checkpoint_uuid
    return (checkpoint / state_file).read_bytes(), record.metric_rows(
        experiment.directory, trial.id
    )


def check_exact_restart(
    master: MasterProcess, form: str, killed: dict[str, tuple[int, Path]], tmp_path: Path
) -> None:
    http = master.http
    model, state_file = FORMS[form]
    expected_state, expected_rows = undisturbed(model, tmp_path, state_file)
    assert [b for kind, b, _ in expected_rows if kind == "validation"] == [8, 16, 24]
    experiment_id, marker = killed[form]
    wait_for(http, experiment_id, {"COMPLETED"}, timeout=240, master=master)
    (trial,) = trials(http, experiment_id)
    assert marker.exists()
    assert trial["restarts"] == 1
    assert "from the checkpoint at batch 8" in logs(http, trial["id"])
    checkpoint = master.home / "pedl" / "checkpoints" / trial["latest_checkpoint_uuid"]
    assert (checkpoint / state_file).read_bytes() == expected_state
    assert metric_rows(http, trial["id"]) == expected_rows


def test_script_killed_mid_chunk_restarts_exactly(
    master: MasterProcess, killed: dict[str, tuple[int, Path]], tmp_path: Path
) -> None:
    check_exact_restart(master, "script", killed, tmp_path)


def test_tensorflow_trial_killed_mid_chunk_restarts_exactly(
    master: MasterProcess, killed: dict[str, tuple[int, Path]], tmp_path: Path
) -> None:
    check_exact_restart(master, "tensorflow", killed, tmp_path)
