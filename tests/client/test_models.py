"""The model registry and checkpoints by hand through the SDK and the CLI, on a real master
API: ``pedl model ...``, ``pedl checkpoint delete``, ``pedl trial download``, and
``Checkpoint.delete / get_metadata / add_metadata / remove_metadata / write_metadata_file /
get_metrics``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from pedl.cli import cli
from pedl.client import Client, Experiment, PEDLError
from pedl.db import Trial
from pedl.vocabulary import ExperimentState, TrialState

from .helpers import LiveMaster, report, store_checkpoint

FILES = {"model.weights.h5": b"w" * 100, "metadata.json": b"{}"}


@pytest.fixture
def experiment(client: Client, config_file: Path, model_dir: Path) -> Experiment:
    return client.create_experiment(config_file, model_dir)


def _pedl(master: LiveMaster, *args: str) -> Result:
    return CliRunner().invoke(cli, ["--master", master.url, *args])


def _two_checkpoints(
    master: LiveMaster, experiment: Experiment, storage: Path
) -> tuple[int, str, str]:
    """A trial with a better checkpoint at 50 batches and a later, worse one at 100."""
    trial_id, token = master.create_trial(experiment.id)
    with master.trial_api(token) as api:
        report(api, trial_id, "validation", 50, val_loss=0.25)
        best = store_checkpoint(api, trial_id, storage, 50, FILES)
        report(api, trial_id, "validation", 100, val_loss=0.75)
        latest = store_checkpoint(api, trial_id, storage, 100, {**FILES, "late": b"l"})
    return trial_id, best, latest


def test_model_cli_and_sdk(
    master: LiveMaster, client: Client, experiment: Experiment, storage: Path, tmp_path: Path
) -> None:
    name = f"cli-model-{experiment.id}"
    created = _pedl(master, "model", "create", name, "--description", "d", "--labels", "a,b")
    assert created.exit_code == 0 and f"Created model {name!r}" in created.output, created.output
    again = _pedl(master, "model", "create", name)
    assert again.exit_code != 0 and "already exists" in again.output
    too_long = _pedl(master, "model", "create", "x" * 256)
    assert too_long.exit_code != 0 and "name" in too_long.output

    trial_id, best, latest = _two_checkpoints(master, experiment, storage)
    registered = _pedl(master, "model", "register-version", name, best)
    assert registered.exit_code == 0, registered.output
    assert f"as version 1 of model {name!r}" in registered.output
    twice = _pedl(master, "model", "register-version", name, best)
    assert twice.exit_code != 0, twice.output
    assert f"already version 1 of model {name!r}" in twice.output, twice.output
    listed = _pedl(master, "model", "list")
    assert name in listed.output and "a, b" in listed.output
    assert name in _pedl(master, "m").output  # det's alias; alone, it lists
    by_description = _pedl(master, "m", "ls", "--sort-by", "description", "--order-by", "desc")
    assert by_description.exit_code == 0 and name in by_description.output
    one = _pedl(master, "model", "describe", name, "--version", "2")
    assert one.exit_code == 0 and "No version 2" in one.output, one.output
    described = _pedl(master, "model", "describe", name)
    assert described.exit_code == 0 and best in described.output, described.output
    versions = json.loads(_pedl(master, "model", "list-versions", name, "--json").output)
    assert [(v["version"], v["checkpoint"]["uuid"]) for v in versions] == [(1, best)]

    # The SDK finds it by name and version (Determined's names).
    model = client.get_model(name)
    assert model.labels == ["a", "b"] and model.description == "d"
    version = model.get_version(1)
    assert version is not None and version.checkpoint.uuid == best
    assert model.get_version(2) is None
    assert [m.name for m in client.get_models(name=name)] == [name]
    assert client.list_models(labels=["b"], name=name)[0].model_id == model.model_id
    v2 = model.register_version(latest)
    assert [v.model_version for v in model.get_versions()] == [2, 1]
    v2.delete()

    # A registered checkpoint's delete is refused with the reason; others go.
    refused = _pedl(master, "checkpoint", "delete", best, "--yes")
    assert refused.exit_code == 1 and f"registered in the model registry as {name} v1" in (
        refused.output
    ), refused.output
    live = _pedl(master, "checkpoint", "delete", latest, "--yes")
    assert live.exit_code == 1 and "latest checkpoint of trial" in live.output, live.output
    with pytest.raises(PEDLError, match="registered in the model registry"):
        client.get_checkpoint(best).delete()

    # Downloads: the trial's best and latest checkpoints.
    got = _pedl(master, "trial", "download", str(trial_id), "--best", "-o", str(tmp_path / "b"))
    assert got.exit_code == 0 and "Local checkpoint path" in got.output, got.output
    assert (tmp_path / "b" / "model.weights.h5").read_bytes() == FILES["model.weights.h5"]
    got = _pedl(master, "trial", "download", str(trial_id), "--latest", "-o", str(tmp_path / "l"))
    assert got.exit_code == 0 and (tmp_path / "l" / "late").read_bytes() == b"l", got.output
    neither = _pedl(master, "trial", "download", str(trial_id))
    assert neither.exit_code != 0 and "exactly one of --best, --latest or --uuid" in neither.output

    # Once the trial ended, its latest checkpoint may go: DELETED everywhere, files gone.
    master.set_trial_state(trial_id, TrialState.COMPLETED)
    deleted = _pedl(master, "checkpoint", "delete", latest, "--yes")
    assert deleted.exit_code == 0 and f"Deleted checkpoint {latest}" in deleted.output
    assert not (storage / latest).exists()
    assert client.get_checkpoint(latest).state == "DELETED"
    assert "DELETED" in _pedl(master, "checkpoint", "describe", latest).output
    assert client.get_trial(trial_id).latest_checkpoint_uuid == best  # the one left

    deleted_model = _pedl(master, "model", "delete", name)
    assert deleted_model.exit_code == 0, deleted_model.output
    assert client.get_checkpoint(best).state == "COMPLETED"  # the checkpoint stays
    master.set_experiment_state(experiment.id, ExperimentState.COMPLETED)


def test_checkpoint_metadata_and_metrics(
    master: LiveMaster, client: Client, experiment: Experiment, storage: Path, tmp_path: Path
) -> None:
    _trial_id, best, _latest = _two_checkpoints(master, experiment, storage)
    checkpoint = client.get_checkpoint(best)
    checkpoint.add_metadata({"team": "vision", "framework": "keras"})
    assert checkpoint.metadata == {"framework": "keras", "team": "vision"}
    checkpoint.remove_metadata(["framework", "absent"])
    assert client.get_checkpoint(best).get_metadata() == {"team": "vision"}
    checkpoint.write_metadata_file(tmp_path / "metadata.json")
    assert json.loads((tmp_path / "metadata.json").read_text()) == {"team": "vision"}
    with pytest.raises(PEDLError, match="at most 65,536 bytes"):
        checkpoint.add_metadata({"big": "x" * 70_000})

    # get_metrics: what the trials that started from this checkpoint reported.
    assert list(checkpoint.get_metrics()) == []
    follower, token = master.create_trial(experiment.id)
    with master.database.session(write=True) as session:
        session.get_one(Trial, follower).warm_start_checkpoint_uuid = best
    with master.trial_api(token) as api:
        report(api, follower, "training", 10, loss=1.5)
        report(api, follower, "validation", 10, val_loss=0.5)
    metrics = list(checkpoint.get_metrics())
    assert [(m.trial_id, m.group, m.metrics) for m in metrics] == [
        (follower, "training", {"loss": 1.5}),
        (follower, "validation", {"val_loss": 0.5}),
    ]
    assert [m.group for m in checkpoint.get_metrics("validation")] == ["validation"]
