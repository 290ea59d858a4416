"""``pedl`` as a Determined (``det``) user types it: ``--config KEY=VALUE``, ``DET_*`` sign-in,
det's abbreviations and verbs, on a real master."""

from __future__ import annotations

import tarfile
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner, Result

import pedl
from pedl.cli import cli
from pedl.client import Client, NotFoundError, Session, TokenStore
from pedl.engine import ExperimentState, TrialState
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
    master: LiveMaster, client: Client, filled: Filled
) -> None:
    exp = str(filled.experiment_id)
    files = [filled.storage / uuid / "w.bin" for uuid in filled.uuids]
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
    assert not any(path.parent.exists() for path in files)
    with pytest.raises(NotFoundError):
        client.get_experiment(filled.experiment_id)
    assert "not found" in run(master, "experiment", "delete", exp, "--yes").output
