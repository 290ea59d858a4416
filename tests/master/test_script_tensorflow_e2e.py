"""End to end on a real master: a simple model definition (a script that calls ``fit()``)
and a TensorFlowTrial, each run undisturbed and run SIGKILLed mid-chunk (after batch 11; the
latest checkpoint is at batch 8) and restarted by the master: the restarted run's final
checkpoint is bitwise equal to the undisturbed run's and its metric rows are the same."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

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
def experiments(
    master: MasterProcess, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, tuple[int, int, Path]]:
    """Per form: the undisturbed and the killed experiment (all four run side by side)."""
    created = {}
    for form, (model, _) in FORMS.items():
        marker = tmp_path_factory.mktemp(form) / "killed"
        env = ["PEDL_TEST_KILL_AT_BATCH=11", f"PEDL_TEST_MARKER={marker}"]
        reference = create_experiment(master.http, config(model, "reference", []), model)
        killed = create_experiment(master.http, config(model, "killed", env), model)
        created[form] = (reference, killed, marker)
    return created


def check_exact_restart(
    master: MasterProcess, form: str, experiments: dict[str, tuple[int, int, Path]]
) -> None:
    http = master.http
    reference, killed, marker = experiments[form]
    results = []
    for experiment_id in (reference, killed):
        wait_for(http, experiment_id, {"COMPLETED"}, timeout=240, master=master)
        (trial,) = trials(http, experiment_id)
        assert trial["state"] == "COMPLETED", logs(http, trial["id"])
        checkpoint = master.home / "pedl" / "checkpoints" / trial["latest_checkpoint_uuid"]
        results.append((trial, (checkpoint / FORMS[form][1]).read_bytes()))
    (reference_trial, reference_state), (killed_trial, killed_state) = results
    assert marker.exists()
    assert killed_trial["restarts"] == 1
    assert "from the checkpoint at batch 8" in logs(http, killed_trial["id"])
    assert killed_state == reference_state
    rows = metric_rows(http, reference_trial["id"])
    assert [b for kind, b, _ in rows if kind == "validation"] == [8, 16, 24]
    assert metric_rows(http, killed_trial["id"]) == rows


def test_script_killed_mid_chunk_restarts_exactly(
    master: MasterProcess, experiments: dict[str, tuple[int, int, Path]]
) -> None:
    check_exact_restart(master, "script", experiments)


def test_tensorflow_trial_killed_mid_chunk_restarts_exactly(
    master: MasterProcess, experiments: dict[str, tuple[int, int, Path]]
) -> None:
    check_exact_restart(master, "tensorflow", experiments)
