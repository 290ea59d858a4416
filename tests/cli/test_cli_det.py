"""``pedl`` as a Determined (``det``) user types it: ``--config KEY=VALUE``, ``DET_*`` sign-in,
det's abbreviations and verbs, on a real master."""

from __future__ import annotations

import json
import tarfile
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner, Result

import pedl
from pedl.cli import cli
from pedl.client import Client, NotFoundError, PEDLError, Session, TokenStore, merge_template
from pedl.db import logs as logs_repo
from pedl.master import MasterSettings
from pedl.master.api.master_config import shown_settings
from pedl.storage import EventFileUploader, SharedFSStorage
from pedl.vocabulary import ExperimentState, TrialState
from tests.accounts import ADMIN, ADMIN_PASSWORD
from tests.client.helpers import LiveMaster, report, store_checkpoint, write_config, write_model_dir

Env = dict[str, str | None]

NO_STORAGE_CONFIG = """\
name: det-habits
entrypoint: model_def:MyTrial
hyperparameters:
  lr: 0.1
searcher:
  name: single
  metric: val_loss
  smaller_is_better: true
  max_length: {batches: 100}
"""


def run(master: LiveMaster, *args: str, env: dict[str, str | None] | None = None) -> Result:
    return CliRunner().invoke(cli, ["--master", master.url, *args], env=env)


def test_config_override_changes_only_that_key(
    master: LiveMaster, client: Client, tmp_path: Path, model_dir: Path
) -> None:
    """No checkpoint_storage in the file: the master fills in its own (under its home), even
    with --config; before, the client's defaults (~/.pedl/checkpoints) went with it and the
    master refused them."""
    config = tmp_path / "config.yaml"
    config.write_text(NO_STORAGE_CONFIG)
    args = ["experiment", "create", str(config), str(model_dir), "--paused"]
    result = run(master, *args, "--config", "hyperparameters.lr=0.25", "--config", "name=over")
    assert result.exit_code == 0, result.output
    exp = client.list_experiments()[0]
    assert exp.name == "over"
    assert exp.config["hyperparameters"]["lr"] in (0.25, {"type": "const", "val": 0.25})
    assert str(Path.home() / ".pedl") not in yaml.safe_dump(exp.config)
    conflicting = run(master, *args, "-t")
    assert conflicting.exit_code == 2 and "--paused cannot" in conflicting.output
    bad = run(master, *args, "--config", "searcher.max_length=-1")
    assert bad.exit_code == 1 and "searcher.max_length" in bad.output


def det_env(master: LiveMaster, config_dir: Path, password: str = ADMIN_PASSWORD) -> Env:
    """Signed in only through Determined's variables, with no saved token."""
    return {
        "PEDL_MASTER": None,
        "PEDL_USER": None,
        "PEDL_PASSWORD": None,
        "PEDL_CONFIG_DIR": str(config_dir),
        "DET_MASTER": master.url.removeprefix("http://"),
        "DET_USER": ADMIN,
        "DET_PASS": password,
    }


def det(*args: str, env: Env) -> Result:
    """``det ARGS`` typed as ``pedl ARGS`` (no --master: DET_MASTER says where)."""
    return CliRunner().invoke(cli, list(args), env=env)


def test_det_variables_sign_in(master: LiveMaster, tmp_path: Path) -> None:
    env = det_env(master, tmp_path / "a")
    listed = det("e", "ls", env=env)
    assert listed.exit_code == 0, listed.output
    version = det("version", env=env)
    assert version.exit_code == 0, version.output
    assert f"client: {pedl.__version__}" in version.output
    assert f"master_address: {master.url}" in version.output
    wrong = det("e", "ls", env=det_env(master, tmp_path / "b", password="wrong"))
    assert wrong.exit_code == 1 and "401" in wrong.output
    # PEDL_* win over DET_* when both are set.
    both = {**det_env(master, tmp_path / "c", password="wrong"), "PEDL_USER": ADMIN}
    both["PEDL_PASSWORD"] = ADMIN_PASSWORD
    assert det("experiment", "list", env=both).exit_code == 0
    with Client(session=Session(tokens=TokenStore(tmp_path / "d"))) as sdk:
        assert sdk.master == "http://127.0.0.1:8080"  # conftest's PEDL_* have no master


def test_det_abbreviations(master: LiveMaster) -> None:
    for args in (["e", "ls"], ["e", "list"], ["experiment", "ls"], ["u", "whoami"]):
        result = run(master, *args)
        assert result.exit_code == 0, (args, result.output)
    assert "trial 999999 not found" in run(master, "t", "logs", "999999").output
    assert run(master, "x", "ls").exit_code == 2


@dataclass
class Filled:
    """An ended experiment with one trial: leveled, timestamped log lines, metrics and two
    checkpoints in shared_fs ``storage``."""

    experiment_id: int
    trial_id: int
    uuids: list[str]
    storage: Path


LOG_LINES = [
    ("starting", "INFO", "2026-11-26T10:00:00+00:00"),
    ("a debug detail", "DEBUG", "2026-11-26T10:00:01+00:00"),
    ("careful now", "WARNING", "2026-11-26T10:00:02+00:00"),
    ("it broke", "ERROR", "2026-11-26T10:00:03+00:00"),
    ("plain stdout", None, None),
]


def fill(master: LiveMaster, client: Client, root: Path) -> Filled:
    storage = root / "checkpoints"
    storage.mkdir(parents=True)
    config = write_config(root, storage)
    exp = client.create_experiment(config, write_model_dir(root))
    trial_id, token = master.create_trial(exp.id)
    lines = [
        {"seq": seq, "message": message, "level": level, "timestamp": stamp}
        for seq, (message, level, stamp) in enumerate(LOG_LINES)
    ]
    with master.trial_api(token) as api:
        assert api.post(f"/trials/{trial_id}/logs", json={"lines": lines}).status_code == 200
        report(api, trial_id, "training", 5, loss=0.5)
        report(api, trial_id, "validation", 5, val_loss=0.4)
        report(api, trial_id, "validation", 10, val_loss=0.3)
        uuids = [
            store_checkpoint(api, trial_id, storage, batches, {"w.bin": b"w" * batches})
            for batches in (5, 10)
        ]
    master.set_trial_state(trial_id, TrialState.COMPLETED)
    master.set_experiment_state(exp.id, ExperimentState.COMPLETED)
    return Filled(exp.id, trial_id, uuids, storage)


@pytest.fixture
def filled(master: LiveMaster, client: Client, tmp_path: Path) -> Filled:
    return fill(master, client, tmp_path)


def test_trial_logs_head_tail_level_timestamps(master: LiveMaster, filled: Filled) -> None:
    def logs(*args: str) -> list[str]:
        result = run(master, "trial", "logs", str(filled.trial_id), *args)
        assert result.exit_code == 0, result.output
        return result.output.splitlines()

    assert logs() == [message for message, _, _ in LOG_LINES]
    assert logs("--head", "2") == ["starting", "a debug detail"]
    assert logs("--tail", "2") == ["it broke", "plain stdout"]
    assert logs("--level", "warning") == ["careful now", "it broke"]
    assert logs("--level", "INFO", "--tail", "1") == ["plain stdout"]
    after = logs(
        "--timestamp-after", "2026-11-26T10:00:01Z", "--timestamp-before", "2026-11-26T10:00:03Z"
    )
    assert after == ["careful now", "plain stdout"]  # a line without a time passes
    stamped = logs("--timestamps", "--head", "1")
    assert stamped == ["[2026-11-26T10:00:00+00:00] starting"]
    both = run(master, "t", "logs", str(filled.trial_id), "--head", "1", "--tail", "1")
    assert both.exit_code == 2 and "cannot both" in both.output
    followed = run(master, "trial", "logs", str(filled.trial_id), "-f", "--tail", "1")
    assert followed.exit_code == 2


def test_trial_logs_rank_id(master: LiveMaster, filled: Filled) -> None:
    with master.database.session(write=True) as session:
        logs_repo.append_logs(
            session,
            filled.trial_id,
            [
                logs_repo.LogLine(seq=100 + rank, message=f"from rank {rank}", rank=rank)
                for rank in (0, 1)
            ],
        )
    result = run(master, "trial", "logs", str(filled.trial_id), "--rank-id", "1")
    assert result.exit_code == 0 and result.output == "from rank 1\n", result.output


def test_experiment_logs_config_and_model_def(
    master: LiveMaster, filled: Filled, tmp_path: Path
) -> None:
    exp = str(filled.experiment_id)
    tail = run(master, "e", "logs", exp, "--tail", "1")
    assert tail.exit_code == 0 and tail.output == "plain stdout\n", tail.output
    config = run(master, "experiment", "config", exp)
    assert config.exit_code == 0, config.output
    assert yaml.safe_load(config.output)["searcher"]["metric"] == "val_loss"
    out = tmp_path / "defs"
    downloaded = run(master, "experiment", "download-model-def", exp, "-o", str(out))
    assert downloaded.exit_code == 0, downloaded.output
    with tarfile.open(out / f"experiment_{exp}_model_def.tgz") as tar:
        assert "model_def.py" in [Path(name).name for name in tar.getnames()]


def test_label_and_set(master: LiveMaster, client: Client, filled: Filled) -> None:
    exp = str(filled.experiment_id)
    assert run(master, "experiment", "label", "add", exp, "keep").exit_code == 0
    assert run(master, "experiment", "label", "add", exp, "best").exit_code == 0
    assert run(master, "experiment", "label", "add", exp, "keep").exit_code == 0
    assert client.get_experiment(filled.experiment_id).labels == ["keep", "best"]
    removed = run(master, "e", "label", "remove", exp, "keep")
    assert removed.exit_code == 0 and "labels: best" in removed.output
    assert run(master, "experiment", "set", "name", exp, "renamed").exit_code == 0
    assert run(master, "experiment", "set", "description", exp, "the one").exit_code == 0
    record = client.get_experiment(filled.experiment_id)
    assert (record.name, record.description) == ("renamed", "the one")
    listed = run(master, "e", "ls", "--json")
    assert '"renamed"' in listed.output


def test_delete_asks_then_removes_checkpoint_files(
    master: LiveMaster, client: Client, filled: Filled, tmp_path: Path
) -> None:
    exp = str(filled.experiment_id)
    files = [filled.storage / uuid / "w.bin" for uuid in filled.uuids]
    # Two snapshots of the trial's TensorBoard event files, as its process uploads them.
    events = tmp_path / "tensorboard"
    events.mkdir()
    uploader = EventFileUploader(SharedFSStorage(filled.storage), filled.trial_id, events)
    for chunk in (b"first", b"second"):
        with (events / "events.out").open("ab") as file:
            file.write(chunk)
        assert uploader.upload() == len(chunk)
    snapshots = sorted(filled.storage.glob(f"tensorboard-trial-{filled.trial_id}-*"))
    assert len(snapshots) == 2
    files += snapshots
    assert all(path.exists() for path in files)
    declined = CliRunner().invoke(
        cli, ["--master", master.url, "experiment", "delete", exp], input="n\n"
    )
    assert declined.exit_code == 1 and "2 checkpoints" in declined.output
    assert client.get_experiment(filled.experiment_id).id == filled.experiment_id
    deleted = CliRunner().invoke(
        cli, ["--master", master.url, "experiment", "delete", exp], input="y\n"
    )
    assert deleted.exit_code == 0, deleted.output
    assert not any(path.exists() for path in files)
    assert sorted(path.name for path in filled.storage.iterdir()) == []
    with pytest.raises(NotFoundError):
        client.get_experiment(filled.experiment_id)
    assert "not found" in run(master, "experiment", "delete", exp, "--yes").output


def test_delete_names_the_files_it_could_not_remove(
    master: LiveMaster, client: Client, filled: Filled, tmp_path: Path
) -> None:
    # One checkpoint's directory is a symbolic link (to files elsewhere): removing it would
    # follow the link, so the storage leaves it and says so; the records go anyway.
    stuck, gone = filled.uuids
    elsewhere = tmp_path / "elsewhere"
    (filled.storage / stuck).rename(elsewhere)
    (filled.storage / stuck).symlink_to(elsewhere)
    result = run(master, "experiment", "delete", str(filled.experiment_id), "--yes")
    assert result.exit_code == 0, result.output
    assert f"Not removed from storage: checkpoint {stuck}: OSError" in result.output
    assert gone not in result.output and not (filled.storage / gone).exists()
    assert (elsewhere / "w.bin").exists() and (filled.storage / stuck).is_symlink()
    with pytest.raises(NotFoundError):
        client.get_experiment(filled.experiment_id)


def test_archive_hides_from_lists_unless_all(
    master: LiveMaster, client: Client, filled: Filled
) -> None:
    exp = str(filled.experiment_id)

    def listed(*args: str) -> list[int]:
        result = run(master, "experiment", "list", "--json", *args)
        assert result.exit_code == 0, result.output
        return [e["id"] for e in json.loads(result.output)]

    assert filled.experiment_id in listed()
    assert run(master, "experiment", "archive", exp).exit_code == 0
    assert client.get_experiment(filled.experiment_id).archived
    assert filled.experiment_id not in listed()
    assert filled.experiment_id in listed("--all")
    assert filled.experiment_id in [e.id for e in client.list_experiments(archived=True)]
    assert run(master, "e", "unarchive", exp).exit_code == 0
    assert filled.experiment_id in listed()
    other = filled.storage.parent / "other"
    other.mkdir()
    active = client.create_experiment(write_config(other, filled.storage), write_model_dir(other))
    refused = run(master, "experiment", "archive", str(active.id))
    assert refused.exit_code == 1 and "only ended experiments" in refused.output


def test_templates_merge_under_the_config(
    master: LiveMaster, client: Client, tmp_path: Path, model_dir: Path, storage: Path
) -> None:
    template_file = tmp_path / "tpl.yaml"
    template_file.write_text(
        "description: from the template\n"
        "hyperparameters:\n  lr: 0.5\n  momentum: 0.9\n"
        f"checkpoint_storage:\n  type: shared_fs\n  host_path: {storage}\n"
    )
    name = f"tpl-{tmp_path.name[-20:]}".replace("_", "-")
    created = run(master, "template", "create", name, str(template_file))
    assert created.exit_code == 0, created.output
    again = run(master, "tpl", "create", name, str(template_file))
    assert again.exit_code == 1 and "exists" in again.output
    assert name in run(master, "template", "ls").output.split()
    described = run(master, "template", "describe", name)
    assert yaml.safe_load(described.output)["hyperparameters"]["momentum"] == 0.9
    config = tmp_path / "config.yaml"
    config.write_text(NO_STORAGE_CONFIG)
    result = run(
        master, "experiment", "create", str(config), str(model_dir), "--template", name, "--paused"
    )
    assert result.exit_code == 0, result.output
    exp = client.list_experiments()[0]
    hparams = exp.config["hyperparameters"]
    assert str(hparams["lr"]) in ("0.1", "{'type': 'const', 'val': 0.1}")  # the config's wins
    assert "momentum" in hparams
    assert exp.config["checkpoint_storage"]["host_path"] == str(storage)
    assert exp.description == "from the template"
    template_file.write_text("description: replaced\n")
    assert run(master, "template", "set", name, str(template_file)).exit_code == 0
    assert client.get_template(name) == {"description": "replaced"}
    template_file.write_text("description: set-value\n")
    assert run(master, "tpl", "set-value", "config", name, str(template_file)).exit_code == 0
    assert client.get_template(name) == {"description": "set-value"}
    assert run(master, "template", "rm", name).exit_code == 0
    assert name not in client.list_templates()
    missing = run(master, "experiment", "create", str(config), str(model_dir), "--template", name)
    assert missing.exit_code == 1 and "not found" in missing.output


def test_merge_template_as_determined() -> None:
    config = {"a": {"x": 1}, "bind_mounts": [{"host_path": "/a"}], "labels": ["c"]}
    template = {
        "a": {"x": 2, "y": 3},
        "bind_mounts": [{"host_path": "/b"}, {"host_path": "/a"}],
        "labels": ["t"],
        "checkpoint_storage": {"type": "s3", "bucket": "b"},
        "searcher": {"name": "grid", "max_trials": 3},
    }
    merged = merge_template({**config, "searcher": {"name": "single"}}, template)
    assert merged["a"] == {"x": 1, "y": 3}
    assert merged["bind_mounts"] == [{"host_path": "/a"}, {"host_path": "/b"}]
    assert merged["labels"] == ["c"]
    assert merged["checkpoint_storage"] == {"type": "s3", "bucket": "b"}
    assert merged["searcher"] == {"name": "single"}
    assert config["a"] == {"x": 1}


def test_include_and_model_dir_optional(
    master: LiveMaster, client: Client, tmp_path: Path, storage: Path
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    write_config(project, storage)
    (project / "model_def.py").write_text("class MyTrial:\n    pass\n")
    extra = tmp_path / "shared_utils"
    extra.mkdir()
    (extra / "helpers.py").write_text("X = 1\n")
    data = tmp_path / "vocab.txt"
    data.write_text("a b c\n")
    result = run(
        master,
        "experiment",
        "create",
        str(project / "config.yaml"),
        "-i",
        str(extra),
        "--include",
        str(data),
        "--paused",
    )
    assert result.exit_code == 0, result.output
    exp = client.list_experiments()[0]
    code = Path(exp.extract_code(tmp_path / "code"))
    assert (code / "model_def.py").is_file() and (code / "config.yaml").is_file()
    assert (code / "shared_utils" / "helpers.py").read_text() == "X = 1\n"
    assert (code / "vocab.txt").is_file()


def test_cluster_views(master: LiveMaster) -> None:
    for args in (["job", "list"], ["j", "ls"], ["slot", "list"], ["agent", "list"]):
        result = run(master, *args)
        assert result.exit_code == 0, (args, result.output)
    agents = json.loads(run(master, "agent", "list", "--json").output)
    assert agents[0]["id"] == "master" and agents[0]["address"] == master.url
    slots = json.loads(run(master, "slot", "list", "--json").output)
    assert len(slots) == agents[0]["slots"]
    info = run(master, "master", "info")
    assert info.exit_code == 0, info.output
    assert f"version: {pedl.__version__}" in info.output and f"master: {master.url}" in info.output
    config = run(master, "master", "config")
    assert config.exit_code == 0, config.output
    settings = yaml.safe_load(config.output)
    assert settings["db_url"] == master.db_url and "home" in settings


def test_master_config_masks_secrets_and_is_for_administrators(
    master: LiveMaster, client: Client, tmp_path: Path
) -> None:
    url = "postgresql+psycopg://pedl:hunter2@db.example/pedl"
    settings = MasterSettings(home=tmp_path, db_url=url, admin_password="sesame-open-1234")
    shown = shown_settings(settings)
    assert "hunter2" not in str(shown) and "sesame-open-1234" not in str(shown)
    assert shown["db_url"] == "postgresql+psycopg://pedl:***@db.example/pedl"
    username = f"viewer{tmp_path.name[-8:]}".replace("_", "").lower()
    client.create_user(username, "viewer-password-123")
    with Client(master.url, session=None) as admin:
        assert admin.session.get("/master/config")["home"]
    viewer = Session(master.url, tokens=TokenStore(tmp_path / "tokens"))
    viewer.login(username, "viewer-password-123")
    with pytest.raises(PEDLError) as refused:
        viewer.get("/master/config")
    assert refused.value.status_code == 403
    viewer.close()
