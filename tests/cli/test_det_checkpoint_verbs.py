"""det's checkpoint and experiment flags that PEDL lacked, through ``det`` on a real master:
``checkpoint download --mode/-q``, ``checkpoint rm --glob`` (the REST API's
``POST /checkpoints/{uuid}/remove-files``, the SDK's ``Checkpoint.remove_files``), ``e
download --sort-by/--smaller-is-better/-q``, ``e wait --polling-interval``."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from pedl.cli._det import det
from pedl.client import Client, PEDLError
from pedl.vocabulary import TrialState
from tests.cli.test_cli_det import Filled, fill
from tests.client.helpers import LiveMaster, report, store_checkpoint


def run_det(master: LiveMaster, *args: str, input: str | None = None) -> Result:
    return CliRunner().invoke(det, ["-m", master.url, *args], input=input)


@pytest.fixture
def filled(master: LiveMaster, client: Client, tmp_path: Path) -> Filled:
    return fill(master, client, tmp_path)


def _two_file_checkpoint(master: LiveMaster, filled: Filled) -> tuple[int, str]:
    trial_id, token = master.create_trial(filled.experiment_id, lr=0.3)
    with master.trial_api(token) as api:
        report(api, trial_id, "validation", 7, val_loss=0.9, other=1.0)
        files = {"model/weights.bin": b"w" * 7, "model/optimizer.bin": b"o" * 3, "notes.txt": b"n"}
        uuid = store_checkpoint(api, trial_id, filled.storage, 7, files)
    return trial_id, uuid


def test_checkpoint_download_mode_and_quiet(
    master: LiveMaster, filled: Filled, tmp_path: Path
) -> None:
    uuid = filled.uuids[1]
    for mode in ("direct", "master", "auto"):
        target = tmp_path / mode
        out = run_det(
            master, "checkpoint", "download", uuid, "-o", str(target), "--mode", mode, "-q"
        )
        assert out.exit_code == 0, out.output
        assert out.output == f"{target}\n"
        assert (target / "w.bin").read_bytes() == b"w" * 10
    bad = run_det(master, "checkpoint", "download", uuid, "--mode", "sideways")
    assert bad.exit_code == 2 and "sideways" in bad.output


def test_checkpoint_rm_globs(master: LiveMaster, client: Client, filled: Filled) -> None:
    trial_id, uuid = _two_file_checkpoint(master, filled)
    master_of_trial = client.get_trial(trial_id)
    assert master_of_trial.latest_checkpoint_uuid == uuid

    refreshed = run_det(master, "checkpoint", "rm", uuid)  # no glob: nothing removed
    assert refreshed.exit_code == 0, refreshed.output
    assert "3 file(s) left" in refreshed.output

    # The latest checkpoint of a trial that may still run keeps its files.
    refused = run_det(master, "checkpoint", "rm", uuid, "--glob", "*.txt", "--yes")
    assert refused.exit_code == 1 and "may still run" in refused.output
    master.set_trial_state(trial_id, TrialState.COMPLETED)

    asked = run_det(master, "checkpoint", "rm", uuid, "--glob", "*.txt", input="n\n")
    assert asked.exit_code == 1  # aborted: nothing removed
    assert (filled.storage / uuid / "notes.txt").is_file()

    removed = run_det(master, "checkpoint", "rm", uuid, "--glob", "model/optim*", "--yes")
    assert removed.exit_code == 0, removed.output
    checkpoint = client.get_checkpoint(uuid)
    assert checkpoint.resources == {"model/weights.bin": 7, "notes.txt": 1}
    # As Determined's: some files gone; no longer the trial's latest (nothing resumes from it).
    assert checkpoint.state == "PARTIALLY_DELETED"
    assert client.get_trial(trial_id).latest_checkpoint_uuid is None
    assert not (filled.storage / uuid / "model" / "optimizer.bin").exists()
    assert (filled.storage / uuid / "model" / "weights.bin").is_file()

    checkpoint.remove_files(["*"])  # the SDK's: nothing left, so DELETED
    assert checkpoint.state == "DELETED" and checkpoint.resources == {}
    with pytest.raises(PEDLError, match="DELETED") as gone:
        checkpoint.remove_files(["*"])
    assert gone.value.status_code == 409


def test_experiment_download_sort_by_and_quiet(
    master: LiveMaster, filled: Filled, tmp_path: Path
) -> None:
    trial_id, uuid = _two_file_checkpoint(master, filled)
    exp = str(filled.experiment_id)
    best = run_det(master, "e", "download", exp, "-o", str(tmp_path / "a"), "-q")
    assert best.exit_code == 0, best.output
    assert best.output == f"{tmp_path / 'a' / filled.uuids[1]}\n"  # val_loss 0.3 is the best
    other = run_det(
        master,
        "e",
        "download",
        exp,
        "-o",
        str(tmp_path / "b"),
        "--sort-by",
        "other",
        "--smaller-is-better",
        "false",
        "-q",
    )
    assert other.exit_code == 0, other.output
    assert other.output == f"{tmp_path / 'b' / uuid}\n"  # the only one with `other`
    worst = run_det(
        master, "e", "download", exp, "-o", str(tmp_path / "c"), "--smaller-is-better", "false"
    )
    assert worst.exit_code == 0 and uuid in worst.output  # val_loss 0.9, largest
    assert trial_id > 0


def test_experiment_wait_polling_interval(master: LiveMaster, filled: Filled) -> None:
    out = run_det(master, "e", "wait", str(filled.experiment_id), "--polling-interval", "0.1")
    assert out.exit_code == 0, out.output
