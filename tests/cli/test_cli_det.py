"""``pedl`` as a Determined (``det``) user types it: ``--config KEY=VALUE``, ``DET_*`` sign-in,
det's abbreviations and verbs, on a real master."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner, Result

from pedl.cli import cli
from pedl.client import Client
from tests.client.helpers import LiveMaster

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


@pytest.fixture
def no_pedl_env() -> dict[str, str | None]:
    return {"PEDL_MASTER": None, "PEDL_USER": None, "PEDL_PASSWORD": None}
