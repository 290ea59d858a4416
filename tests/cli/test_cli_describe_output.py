"""What a newcomer reads from ``pedl``'s describes, logs and lists (issue 35, point 6): metadata
as indented lines, a header over every table, a word when nothing matches or nothing runs."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from pedl.cli import cli
from pedl.cli._display import format_size
from pedl.client import Client
from pedl.db import logs as logs_repo
from pedl.master import MasterSettings, prepare_accounts
from pedl.vocabulary import ExperimentState, TrialState
from tests.client.helpers import LiveMaster, report, store_checkpoint

LONG = "x" * 3000
METADATA = {"framework": "tensorflow", "long": LONG, "nested": {"steps": 4, "note": "[bold]"}}


def run(master: LiveMaster, *args: str) -> Result:
    return CliRunner().invoke(
        cli, ["--master", master.url, *args], env={"COLUMNS": "100", "NO_COLOR": "1"}
    )


@pytest.fixture
def finished(
    master: LiveMaster, client: Client, config_file: Path, model_dir: Path, storage: Path
) -> dict[str, Any]:
    """A COMPLETED one-worker trial with two metric rows, a checkpoint with long, nested
    metadata, and three log lines of INFO or no level."""
    exp = client.create_experiment(config_file, model_dir)
    trial_id, token = master.create_trial(exp.id, lr=0.1)
    with master.trial_api(token) as api:
        report(api, trial_id, "training", 5, loss=0.5)
        report(api, trial_id, "validation", 5, val_loss=0.25)
        uuid = store_checkpoint(api, trial_id, storage, 5, {"w.bin": b"w" * 3000})
    client.get_checkpoint(uuid).add_metadata(METADATA)
    with master.database.session(write=True) as session:
        logs_repo.append_logs(
            session,
            trial_id,
            [
                logs_repo.LogLine(
                    seq=0, message="2026-11-29 08:00:00,1 INFO x: start", level="INFO"
                ),
                logs_repo.LogLine(seq=1, message="Epoch 1/1"),
                logs_repo.LogLine(
                    seq=2, message="2026-11-29 08:00:02,1 INFO x: done", level="INFO"
                ),
            ],
        )
    master.set_trial_state(trial_id, TrialState.COMPLETED)
    master.set_experiment_state(exp.id, ExperimentState.COMPLETED)
    return {"experiment": exp.id, "trial": trial_id, "uuid": uuid}


def _check_metadata(output: str) -> None:
    """The metadata as indented ``key: value`` lines, the long value cut, none over 120."""
    lines = output.splitlines()
    assert "metadata:" in lines, output
    assert "  framework: tensorflow" in lines, output
    assert "  nested:" in lines and "    steps: 4" in lines, output
    assert "    note: [bold]" in lines, output  # not read as markup
    assert f"  long: {'x' * 80}... (3,000 characters)" in lines, output
    assert LONG not in output
    assert "{" not in output, output  # no JSON in a cell
    assert max(len(line) for line in lines) <= 120, output


def test_checkpoint_describe_lists_metadata_apart(
    master: LiveMaster, finished: dict[str, Any]
) -> None:
    described = run(master, "checkpoint", "describe", finished["uuid"])
    assert described.exit_code == 0, described.output
    _check_metadata(described.output)
    assert "2.9 KiB in 1 files" in described.output  # one unit for sizes
    assert "     2.9 KiB  w.bin" in described.output.splitlines(), described.output


def test_model_describe_lists_metadata_apart_and_lowercase_headers(
    master: LiveMaster, client: Client, finished: dict[str, Any]
) -> None:
    model = client.create_model(f"described-{finished['trial']}", "d")
    model.add_metadata({"owner_team": "vision", "long": LONG})
    model.register_version(finished["uuid"])
    described = run(master, "model", "describe", model.name)
    assert described.exit_code == 0, described.output
    assert "  owner_team: vision" in described.output.splitlines(), described.output
    assert f"  long: {'x' * 80}... (3,000 characters)" in described.output.splitlines()
    _check_metadata(described.output.split("Version 1", 1)[1])  # the checkpoint's
    header = next(line for line in described.output.splitlines() if "versions" in line)
    for column in ("id", "name", "versions", "labels", "owner", "updated", "description"):
        assert column in header.split(), header
    versions = run(master, "model", "list-versions", model.name)
    assert "version" in versions.output and "checkpoint" in versions.output, versions.output
    assert "Version " not in versions.output and "Checkpoint " not in versions.output


def test_trial_describe_metrics_rows_under_a_header(
    master: LiveMaster, finished: dict[str, Any]
) -> None:
    described = run(master, "trial", "describe", str(finished["trial"]), "--metrics")
    assert described.exit_code == 0, described.output
    lines = described.output.splitlines()
    start = next(
        i for i, line in enumerate(lines) if f"Metrics of trial {finished['trial']}" in line
    )
    cells = [
        [cell.strip() for cell in re.split("[┃│]", line)[1:-1]]
        for line in lines[start:]
        if re.search("[┃│]", line)
    ]
    assert cells == [
        ["kind", "batches", "metrics"],
        ["training", "5", "loss=0.5"],
        ["validation", "5", "val_loss=0.25"],
    ], lines[start:]


def test_logs_say_when_no_line_matches(master: LiveMaster, finished: dict[str, Any]) -> None:
    trial = str(finished["trial"])
    everything = run(master, "trial", "logs", trial)
    assert everything.exit_code == 0 and everything.stdout.count("\n") == 3
    assert everything.stderr == ""
    warnings = run(master, "trial", "logs", trial, "--level", "WARNING")
    assert warnings.exit_code == 0, warnings.output
    assert warnings.stdout == ""
    assert warnings.stderr == f"0 lines match --level WARNING in trial {trial}'s log\n"
    ranked = run(master, "trial", "logs", trial, "--rank", "0")
    assert ranked.exit_code == 0 and ranked.stdout == ""
    assert ranked.stderr.startswith(f"0 lines match --rank 0 in trial {trial}'s log")
    assert "it ran one worker process; leave out --rank" in ranked.stderr
    det_spelling = run(master, "trial", "logs", trial, "--rank-id", "0")
    assert det_spelling.exit_code == 0 and "0 lines match --rank 0" in det_spelling.stderr
    headed = run(master, "trial", "logs", trial, "--head", "0")  # asked for none: no word
    assert headed.exit_code == 0 and headed.output == ""


@pytest.mark.parametrize("group", [["trial"], ["experiment"]])
def test_logs_help_lists_one_rank_option(master: LiveMaster, group: list[str]) -> None:
    helped = run(master, *group, "logs", "--help")
    assert helped.exit_code == 0, helped.output
    assert "--rank " in helped.output and "--rank-id" not in helped.output, helped.output


@pytest.fixture(scope="module")
def bare_master(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveMaster]:
    """A master of its own that has never run a TensorBoard."""
    live = LiveMaster(tmp_path_factory.mktemp("bare-master-home"))
    live.start()
    prepare_accounts(live.database, MasterSettings(db_url=live.db_url))
    try:
        yield live
    finally:
        live.stop()


def test_empty_tensorboard_list_is_one_line(bare_master: LiveMaster) -> None:
    listed = run(bare_master, "tensorboard", "list")
    assert listed.exit_code == 0, listed.output
    assert listed.output == "No TensorBoards (start one: pedl tensorboard start EXPERIMENT_ID)\n"


@pytest.mark.parametrize(
    ("size", "text"),
    # The web UI's formatBytes gives the same (ui/test/format.test.ts): one unit everywhere.
    [
        (12, "12 B"),
        (1023, "1023 B"),
        (3000, "2.9 KiB"),
        (867_234, "846.9 KiB"),
        (1_500_000_000, "1.4 GiB"),
        (5 * 1024**4, "5120.0 GiB"),
    ],
)
def test_sizes_as_the_web_ui_writes_them(size: int, text: str) -> None:
    assert format_size(size) == text
