"""End to end on a real master: the PEDL 0.x form (``build_model(hparams)``,
``make_data_loaders``) and a Determined-style TFKerasTrial imported through ``determined``,
each run undisturbed and run SIGKILLed mid-chunk (after batch 11; the latest checkpoint is
at batch 8) and restarted by the master: the restarted run's final checkpoint is bitwise
equal to the undisturbed run's and its metric rows are the same."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.master.e2e import MasterProcess, create_experiment, logs, metric_rows, trials, wait_for

pytestmark = pytest.mark.slow

MODELS = Path(__file__).parent / "e2e_models"
FORMS = ("legacy", "determined")


@pytest.fixture(scope="module")
def master(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MasterProcess]:
    process = MasterProcess(tmp_path_factory.mktemp("master"), env={"PEDL_AUTH": "false"}).start()
    try:
        yield process
    finally:
        process.stop()


def config(form: str, name: str, env: list[str]) -> str:
    text = (MODELS / form / "const.yaml").read_text().replace("name: ", f"name: {name}-", 1)
    return f"{text}max_restarts: 2\nenvironment:\n  environment_variables: {env}\n"


@pytest.fixture(scope="module")
def experiments(
    master: MasterProcess, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, tuple[int, int, Path]]:
    created = {}
    for form in FORMS:
        marker = tmp_path_factory.mktemp(form) / "killed"
        env = ["PEDL_TEST_KILL_AT_BATCH=11", f"PEDL_TEST_MARKER={marker}"]
        reference = create_experiment(master.http, config(form, "reference", []), MODELS / form)
        killed = create_experiment(master.http, config(form, "killed", env), MODELS / form)
        created[form] = (reference, killed, marker)
    return created


@pytest.mark.parametrize("form", FORMS)
def test_killed_mid_chunk_restarts_exactly(
    master: MasterProcess, experiments: dict[str, tuple[int, int, Path]], form: str
) -> None:
    http = master.http
    reference, killed, marker = experiments[form]
    results = []
    for experiment_id in (reference, killed):
        wait_for(http, experiment_id, {"COMPLETED"}, timeout=300, master=master)
        (trial,) = trials(http, experiment_id)
        assert trial["state"] == "COMPLETED", logs(http, trial["id"])
        checkpoint = master.home / "pedl" / "checkpoints" / trial["latest_checkpoint_uuid"]
        results.append((trial, (checkpoint / "state" / "variables.bin").read_bytes()))
    (reference_trial, reference_state), (killed_trial, killed_state) = results
    assert marker.exists()
    assert killed_trial["restarts"] == 1
    assert "from the checkpoint at batch 8" in logs(http, killed_trial["id"])
    assert killed_state == reference_state
    rows = metric_rows(http, reference_trial["id"])
    assert [b for kind, b, _ in rows if kind == "validation"] == [8, 16, 24]
    assert metric_rows(http, killed_trial["id"]) == rows
