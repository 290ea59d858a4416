"""``pedl`` as a Determined (``det``) user types it: ``--config KEY=VALUE``, ``DET_*`` sign-in,
det's abbreviations and verbs, on a real master."""

from __future__ import annotations

from pathlib import Path

import yaml
from click.testing import CliRunner, Result

import pedl
from pedl.cli import cli
from pedl.client import Client, Session, TokenStore
from tests.accounts import ADMIN, ADMIN_PASSWORD
from tests.client.helpers import LiveMaster

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
