"""``pedl experiment create`` refuses a model directory with more files than the master
accepts before uploading, counting the directories right: files lying in the model directory
itself are in one directory, not in none."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from pedl.cli import cli
from pedl.master import MasterSettings
from tests.client.helpers import LiveMaster


def test_too_many_files_names_the_directories(
    master: LiveMaster, config_file: Path, tmp_path: Path
) -> None:
    limit = MasterSettings().max_model_definition_members  # the live master's
    model_dir = tmp_path / "crowded"
    (model_dir / "sub").mkdir(parents=True)
    (model_dir / "model_def.py").write_text("class MyTrial:\n    pass\n")
    for i in range(limit):
        (model_dir / f"data_{i}.txt").touch()
    (model_dir / "sub" / "more.txt").touch()
    files = limit + 2
    result = CliRunner().invoke(
        cli, ["--master", master.url, "experiment", "create", str(config_file), str(model_dir)]
    )
    assert result.exit_code == 1, result.output
    assert (
        f"{files} files in 2 directories (the model directory and 1 under it): "
        f"{files + 1} archive members, more than the limit of {limit}"
    ) in result.output, result.output
    assert f"{files - 1} files  ./ (the model directory)" in result.output
