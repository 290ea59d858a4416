"""Determined 0.38.1's SDK calls that PEDL's SDK lacked, through ``pedl.client`` and the
``determined.experimental.client`` name, on a real master over HTTP: ``Determined(master,
user, password)``, the accounts (``whoami``, ``list_users``, ``create_user``,
``get_user_by_*``, ``User``'s methods), the sort enums, ``list_checkpoints``/``list_trials``
with Determined's arguments, ``Checkpoint.training``/``report_time``/``download(mode)``,
``ModelVersion``'s edits, ``get_model_labels`` and ``download_code``'s ``.tar.gz``."""

from __future__ import annotations

import tarfile
import uuid
import warnings
from pathlib import Path

import pytest

from pedl.client import (
    CheckpointSortBy,
    Client,
    Determined,
    DownloadMode,
    NotFoundError,
    NotSignedInError,
    OrderBy,
    PEDLError,
    TrialSortBy,
    set_master,
)
from tests.accounts import ADMIN, ADMIN_PASSWORD
from tests.cli.test_cli_det import Filled, fill
from tests.client.helpers import LiveMaster, report, store_checkpoint


@pytest.fixture
def filled(master: LiveMaster, client: Client, tmp_path: Path) -> Filled:
    return fill(master, client, tmp_path)


def _det_client() -> object:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        from determined.experimental import client as det_client
    return det_client


def test_determined_class_signs_in(master: LiveMaster, tmp_path: Path) -> None:
    det = Determined(master.url, ADMIN, ADMIN_PASSWORD)
    try:
        assert det.whoami().username == ADMIN
        assert det.get_session_username() == ADMIN
    finally:
        det.close()
    with pytest.raises(NotSignedInError):
        Determined(master.url, ADMIN, "wrong-password-here")
    det_client = _det_client()
    assert det_client.Determined is Client  # type: ignore[attr-defined]


def test_accounts_as_determined_has_them(master: LiveMaster, client: Client) -> None:
    name = f"gap-{uuid.uuid4().hex[:8]}"
    created = client.create_user(name, False, "gap-password-123")
    assert (created.username, created.admin, created.active) == (name, False, True)
    assert created.user_id is not None and created.remote is False
    assert created.display_name is None and created.agent_uid is None
    by_id = client.get_user_by_id(created.user_id)
    assert by_id.username == name
    assert client.get_user_by_name(name).user_id == created.user_id
    with pytest.raises(NotFoundError):
        client.get_user_by_name(f"{name}-none")

    created.deactivate()
    assert created.active is False
    assert name not in [u.username for u in client.list_users(active=True)]
    assert name in [u.username for u in client.list_users(active=False)]
    created.activate()
    assert created.active is True

    renamed = f"{name}-r"
    created.rename(renamed)
    assert created.username == renamed and created.user_id == by_id.user_id
    by_id.reload()  # by id: sees the rename
    assert by_id.username == renamed
    with pytest.raises(PEDLError, match="display names") as refused:
        created.change_display_name("Someone")
    assert refused.value.status_code == 422 and refused.value.field == "display_name"
    with pytest.raises(PEDLError, match="OS user"):
        created.link_with_agent(agent_uid=1000)
    created.change_password("gap-password-456")
    other = Client(master.url, renamed, "gap-password-456")
    try:
        assert other.whoami().username == renamed
    finally:
        other.close()
    with pytest.raises(PEDLError, match="remote"):
        client.create_user(f"{name}-sso", False, remote=True)
    with pytest.raises(PEDLError, match="master makes"):
        client.get_user_by_name(ADMIN).rename("root")


def test_rename_moves_ownership(master: LiveMaster, client: Client, tmp_path: Path) -> None:
    name = f"owner-{uuid.uuid4().hex[:8]}"
    client.create_user(name, password="owner-password-1")
    mine = Client(master.url, name, "owner-password-1")
    try:
        model = mine.create_model(f"model-of-{name}")
        client.get_user_by_name(name).rename(f"{name}-2")
        assert client.get_model(model.model_id).username == f"{name}-2"
    finally:
        mine.close()


def test_module_functions(master: LiveMaster, client: Client, filled: Filled) -> None:
    det_client = _det_client()
    det_client.login(master.url, ADMIN, ADMIN_PASSWORD)  # type: ignore[attr-defined]
    try:
        assert det_client.whoami().username == ADMIN  # type: ignore[attr-defined]
        assert det_client.get_session_username() == ADMIN  # type: ignore[attr-defined]
        users = det_client.list_users()  # type: ignore[attr-defined]
        assert ADMIN in [u.username for u in users]
        admin = det_client.get_user_by_name(ADMIN)  # type: ignore[attr-defined]
        assert det_client.get_user_by_id(admin.user_id).username == ADMIN  # type: ignore[attr-defined]
        rows = list(det_client.stream_trials_metrics([filled.trial_id], "validation"))  # type: ignore[attr-defined]
        assert [r.steps_completed for r in rows] == [5, 10]
        for labels in (["a", "b"], ["b"], ["b", "c"]):
            det_client.create_model(f"labels-{uuid.uuid4().hex[:8]}").set_labels(labels)  # type: ignore[attr-defined]
        found = det_client.get_model_labels()  # type: ignore[attr-defined]
        assert found[0] == "b" and found.index("a") < found.index("c") and "c" in found
        assert det_client.ExperimentState.RUNNING == "RUNNING"  # type: ignore[attr-defined]
        state = client.get_experiment(filled.experiment_id).state
        assert state == det_client.ExperimentState.COMPLETED  # type: ignore[attr-defined]
        assert det_client.CheckpointState.PARTIALLY_DELETED == "PARTIALLY_DELETED"  # type: ignore[attr-defined]
        for enum_name in ("TrialSortBy", "TrialOrderBy", "CheckpointSortBy", "CheckpointOrderBy"):
            assert hasattr(det_client, enum_name), enum_name
        assert det_client.ModelOrderBy.ASCENDING == "ASC"  # type: ignore[attr-defined]
        assert det_client.ExperimentOrderBy.DESC == "DESC"  # type: ignore[attr-defined]
        assert det_client.DownloadMode.MASTER == "master"  # type: ignore[attr-defined]
        det_client.logout()  # type: ignore[attr-defined]
        with pytest.raises(NotSignedInError):
            det_client.whoami()  # type: ignore[attr-defined]
    finally:
        set_master(None)


def _second_trial(master: LiveMaster, client: Client, filled: Filled) -> tuple[int, str]:
    """A second trial of the filled experiment: better validation, one checkpoint."""
    trial_id, token = master.create_trial(filled.experiment_id, lr=0.2)
    with master.trial_api(token) as api:
        report(api, trial_id, "validation", 3, val_loss=0.1)
        checkpoint = store_checkpoint(api, trial_id, filled.storage, 3, {"w.bin": b"v"})
    return trial_id, checkpoint


def test_lists_with_determined_arguments(
    master: LiveMaster, client: Client, filled: Filled
) -> None:
    second, best_uuid = _second_trial(master, client, filled)
    exp = client.get_experiment(filled.experiment_id)
    first_five, first_ten = filled.uuids
    # Determined's default: by the searcher metric (val_loss, smaller is better)
    assert [c.uuid for c in exp.list_checkpoints(max_results=10)] == [
        best_uuid,
        first_ten,
        first_five,
    ]
    by_batches = exp.list_checkpoints(CheckpointSortBy.BATCH_NUMBER, OrderBy.DESC)
    assert [c.total_batches for c in by_batches] == [10, 5, 3]
    assert [c.uuid for c in exp.list_checkpoints("val_loss", OrderBy.ASC, 1)] == [best_uuid]
    with pytest.raises(AssertionError):
        exp.list_checkpoints(CheckpointSortBy.UUID)
    # PEDL's own: every checkpoint, oldest first
    assert [c.uuid for c in exp.list_checkpoints()] == [first_five, first_ten, best_uuid]
    assert [c.uuid for c in exp.top_n_checkpoints(limit=1)] == [best_uuid]

    assert [t.id for t in exp.list_trials()] == [filled.trial_id, second]
    assert [t.id for t in exp.list_trials(TrialSortBy.ID, OrderBy.DESC)] == [
        second,
        filled.trial_id,
    ]
    best_first = exp.list_trials(sort_by=TrialSortBy.BEST_VALIDATION_METRIC)
    assert [t.id for t in best_first] == [second, filled.trial_id]
    by_batches_trials = exp.list_trials(TrialSortBy.BATCHES_PROCESSED, OrderBy.DESCENDING)
    assert [t.id for t in by_batches_trials] == [filled.trial_id, second]
    assert [t.id for t in exp.iter_trials(limit=1)] == [filled.trial_id, second]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert [t.id for t in exp.get_trials()] == [filled.trial_id, second]

    trial = client.get_trial(filled.trial_id)
    assert [c.uuid for c in trial.list_checkpoints(max_results=1)] == [first_ten]
    ordered = trial.list_checkpoints(CheckpointSortBy.BATCH_NUMBER, OrderBy.ASC)
    assert [c.uuid for c in ordered] == [first_five, first_ten]


def test_checkpoint_training_and_download_modes(
    client: Client, filled: Filled, tmp_path: Path
) -> None:
    checkpoint = client.get_checkpoint(filled.uuids[1])
    training = checkpoint.training
    assert training is not None
    assert (training.experiment_id, training.trial_id) == (filled.experiment_id, filled.trial_id)
    assert training.hparams == {"lr": 0.1}
    assert training.experiment_config["searcher"]["metric"] == "val_loss"
    assert training.validation_metrics == {"avgMetrics": {"val_loss": 0.3}}
    assert checkpoint.report_time is not None and checkpoint.report_time.endswith("Z")
    direct = checkpoint.download(str(tmp_path / "direct"), mode=DownloadMode.DIRECT)
    through = checkpoint.download(str(tmp_path / "master"), mode="master")
    assert (direct / "w.bin").read_bytes() == (through / "w.bin").read_bytes() == b"w" * 10


def test_model_version_edits(client: Client, filled: Filled) -> None:
    model = client.create_model(f"versions-{uuid.uuid4().hex[:8]}")
    version = model.register_version(filled.uuids[1])
    version.set_name("first")
    version.set_notes("# readme")
    assert (version.name, version.notes) == ("first", "# readme")
    again = model.get_version(version.model_version)
    assert again is not None and (again.name, again.notes) == ("first", "# readme")
    again.set_name("renamed")
    version.reload()
    assert version.name == "renamed"
    assert list(version.get_metrics()) == []  # no trial started from it
    with pytest.raises(PEDLError) as refused:
        version.set_name("")
    assert refused.value.status_code == 422


def test_download_code_writes_the_archive(client: Client, filled: Filled, tmp_path: Path) -> None:
    exp = client.get_experiment(filled.experiment_id)
    path = Path(exp.download_code(str(tmp_path / "out")))
    assert path == tmp_path / "out" / f"exp-{exp.id}_model_def.tar.gz"
    with tarfile.open(path) as archive:
        assert "model_def.py" in [Path(n).name for n in archive.getnames()]
    assert Path(exp.download_code(str(tmp_path / "out"))) == path  # replaced, as det's
    extracted = Path(exp.extract_code(tmp_path / "code"))
    assert (extracted / "model_def.py").is_file()
