"""Checkpoints through the SDK: lookup, experiment-wide best, downloads (local and HTTP)."""

from __future__ import annotations

import shutil
from pathlib import Path

import httpx
import pytest

from pedl.client import Client, Experiment, NotFoundError, PEDLError

from .helpers import LiveMaster, report, store_checkpoint

FILES = {
    "model.weights.h5": bytes(range(256)) * 300,
    "state/rng.json": b'{"seed": 3}',
    "state/deep/data position.txt": b"epoch 2 batch 17",
    "empty": b"",
}


@pytest.fixture
def experiment(client: Client, config_file: Path, model_dir: Path) -> Experiment:
    return client.create_experiment(config_file, model_dir)


def _read_tree(root: Path) -> dict[str, bytes]:
    return {
        path.relative_to(root).as_posix(): path.read_bytes()
        for path in sorted(root.rglob("*"))
        if path.is_file()
    }


@pytest.fixture
def checkpoint_uuid(master: LiveMaster, experiment: Experiment, storage: Path) -> str:
    trial_id, token = master.create_trial(experiment.id)
    with master.trial_api(token) as api:
        report(api, trial_id, "validation", 50, val_loss=0.25)
        return store_checkpoint(api, trial_id, storage, 50, FILES)


def test_get_checkpoint(client: Client, checkpoint_uuid: str, experiment: Experiment) -> None:
    checkpoint = client.get_checkpoint(checkpoint_uuid)
    assert checkpoint.uuid == checkpoint_uuid and checkpoint.experiment_id == experiment.id
    assert checkpoint.state == "COMPLETED" and checkpoint.total_batches == 50
    assert checkpoint.resources == {k: len(v) for k, v in FILES.items()}
    assert checkpoint.size == sum(len(v) for v in FILES.values())
    assert checkpoint.validation_metrics == {"val_loss": 0.25}
    assert checkpoint.metadata == {"framework": "test"}
    assert checkpoint.list_files() == {k: len(v) for k, v in sorted(FILES.items())}


@pytest.mark.parametrize("local", [True, False], ids=["local-copy", "through-master"])
def test_download_gives_every_file_byte_for_byte(
    client: Client, checkpoint_uuid: str, tmp_path: Path, local: bool
) -> None:
    target = client.get_checkpoint(checkpoint_uuid).download(tmp_path / "dl", local=local)
    assert target == tmp_path / "dl"
    assert _read_tree(target) == FILES


def test_download_default_path(
    client: Client, checkpoint_uuid: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    target = client.get_checkpoint(checkpoint_uuid).download(local=False)
    assert target == Path("checkpoints", checkpoint_uuid)
    assert _read_tree(tmp_path / target) == FILES


def test_archive_route_is_a_plain_tar_of_known_length(
    master: LiveMaster, checkpoint_uuid: str, user_headers: dict[str, str]
) -> None:
    response = httpx.get(
        f"{master.url}/api/v1/checkpoints/{checkpoint_uuid}/archive", headers=user_headers
    )
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/x-tar"
    assert int(response.headers["content-length"]) == len(response.content)


def test_download_of_files_gone_from_storage(
    client: Client, checkpoint_uuid: str, storage: Path, tmp_path: Path
) -> None:
    shutil.rmtree(storage / checkpoint_uuid)
    checkpoint = client.get_checkpoint(checkpoint_uuid)
    for local in (True, False):
        with pytest.raises(NotFoundError, match="not in storage"):
            checkpoint.download(tmp_path / "dl", local=local)
    with pytest.raises(NotFoundError, match="not in storage"):
        checkpoint.list_files()


def test_unknown_checkpoint(client: Client) -> None:
    with pytest.raises(NotFoundError) as info:
        client.get_checkpoint("00000000-0000-0000-0000-000000000000")
    assert info.value.status_code == 404 and "not found" in info.value.message
    with pytest.raises(PEDLError) as bad:
        client.get_checkpoint("not-a-uuid")
    assert bad.value.status_code == 422 and bad.value.field == "path.checkpoint_uuid"


def test_experiment_top_checkpoints_across_trials(
    client: Client, master: LiveMaster, experiment: Experiment, storage: Path
) -> None:
    assert experiment.top_checkpoint() is None
    expected = []
    for val_loss in (0.8, 0.2, 0.5):
        trial_id, token = master.create_trial(experiment.id)
        with master.trial_api(token) as api:
            report(api, trial_id, "validation", 10, val_loss=val_loss)
            expected.append((val_loss, store_checkpoint(api, trial_id, storage, 10, {"w": b""})))
    by_loss = [uuid for _, uuid in sorted(expected)]
    best = experiment.top_checkpoint()
    assert best is not None and best.uuid == by_loss[0]
    assert [c.uuid for c in experiment.top_n_checkpoints(2)] == by_loss[:2]
    assert [c.uuid for c in experiment.list_checkpoints()] == [uuid for _, uuid in expected]
    assert experiment.list_checkpoints(states=("DELETED",)) == []
