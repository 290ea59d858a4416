"""det 0.38.1's experiment extras on a real master, through ``det``, ``pedl`` and the SDK under
both names: ``Experiment.notes``/``set_notes``, ``det e set log-retention`` (logs deleted
once the days have passed since the experiment ended) and ``det e delete-tb-files`` (the
trials' TensorBoard event files removed from the checkpoint storage)."""

from __future__ import annotations

import warnings
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
from click.testing import CliRunner, Result

from pedl.cli import cli
from pedl.cli._det import det
from pedl.client import Client, PEDLError, set_master
from pedl.db import experiments as experiments_repo
from pedl.db import logs as logs_repo
from pedl.master._log_retention import LogRetention
from pedl.storage import EventFileUploader, SharedFSStorage
from tests.accounts import ADMIN, ADMIN_PASSWORD
from tests.cli.test_cli_det import LOG_LINES, Filled, fill
from tests.client.helpers import LiveMaster, write_config, write_model_dir


def _det_client() -> object:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        from determined.experimental import client as det_client
    return det_client


def test_notes_through_both_names(
    master: LiveMaster, client: Client, tmp_path: Path, user_headers: dict[str, str]
) -> None:
    filled: Filled = fill(master, client, tmp_path)
    exp = client.get_experiment(filled.experiment_id)
    assert exp.notes is None
    exp.set_notes("# Findings\nlr 0.1 is best")
    assert exp.notes == "# Findings\nlr 0.1 is best"
    assert client.get_experiment(exp.id).notes == "# Findings\nlr 0.1 is best"

    det_client = _det_client()
    det_client.login(master.url, ADMIN, ADMIN_PASSWORD)  # type: ignore[attr-defined]
    try:
        det_exp = det_client.get_experiment(exp.id)  # type: ignore[attr-defined]
        assert det_exp.notes == "# Findings\nlr 0.1 is best"
        det_exp.set_notes("")
        assert det_exp.notes == "" and client.get_experiment(exp.id).notes == ""
    finally:
        set_master(None)

    url = f"{master.url}/api/v1/experiments/{exp.id}"
    too_long = httpx.patch(url, json={"notes": "x" * 100_001}, headers=user_headers)
    assert too_long.status_code == 422 and "notes" in too_long.text
    nul = httpx.patch(url, json={"notes": "a\x00b"}, headers=user_headers)
    assert nul.status_code == 422
    try:
        exp.set_notes("y" * 100_001)
    except PEDLError as err:
        assert "notes" in str(err)
    else:
        raise AssertionError("100,001 characters of notes were accepted")


def run_det(master: LiveMaster, *args: str) -> Result:
    return CliRunner().invoke(det, ["-m", master.url, *args])


def run_pedl(master: LiveMaster, *args: str) -> Result:
    return CliRunner().invoke(cli, ["--master", master.url, *args])


def _log_count(master: LiveMaster, trial_id: int) -> int:
    with master.database.session() as session:
        return len(logs_repo.list_logs(session, trial_id))


def _ended_days_ago(master: LiveMaster, experiment_id: int, days: float) -> None:
    with master.database.session(write=True) as session:
        row = experiments_repo.get_experiment(session, experiment_id, for_update=True)
        row.ended_at = datetime.now(UTC) - timedelta(days=days)


def test_log_retention(master: LiveMaster, client: Client, tmp_path: Path) -> None:
    filled = fill(master, client, tmp_path / "kept")
    exp_id = str(filled.experiment_id)
    assert _log_count(master, filled.trial_id) == len(LOG_LINES)

    kept = run_det(master, "e", "set", "log-retention", exp_id, "--days", "5")
    assert kept.exit_code == 0 and kept.output == "", kept.output  # det prints nothing
    assert client.get_experiment(filled.experiment_id).log_retention_days == 5
    _ended_days_ago(master, filled.experiment_id, 4)
    assert LogRetention(master.database).sweep() == 0
    assert _log_count(master, filled.trial_id) == len(LOG_LINES)
    _ended_days_ago(master, filled.experiment_id, 6)
    assert LogRetention(master.database).sweep() == len(LOG_LINES)
    assert _log_count(master, filled.trial_id) == 0

    other = fill(master, client, tmp_path / "gone")
    forever = run_pedl(
        master, "experiment", "set", "log-retention", str(other.experiment_id), "--forever"
    )
    assert forever.exit_code == 0 and "forever" in forever.output, forever.output
    assert client.get_experiment(other.experiment_id).log_retention_days == -1
    _ended_days_ago(master, other.experiment_id, 400)
    assert LogRetention(master.database).sweep() == 0
    now = run_det(
        master, "experiment", "set", "log-retention", str(other.experiment_id), "--days", "0"
    )
    assert now.exit_code == 0, now.output
    assert _log_count(master, other.trial_id) == 0  # already past: deleted at once

    both = run_det(master, "e", "set", "log-retention", exp_id, "--days", "3", "--forever")
    assert both.exit_code == 2 and "not allowed with argument --days" in both.output
    neither = run_det(master, "e", "set", "log-retention", exp_id)
    assert neither.exit_code == 1 and "Please provide an argument" in neither.output
    too_many = run_det(master, "e", "set", "log-retention", exp_id, "--days", "40000")
    assert too_many.exit_code == 1 and "between -1 and 32767" in too_many.output
    not_a_number = run_det(master, "e", "set", "log-retention", exp_id, "--days", "soon")
    assert not_a_number.exit_code == 2


def test_delete_tb_files(master: LiveMaster, client: Client, tmp_path: Path) -> None:
    filled = fill(master, client, tmp_path)
    events = tmp_path / "tensorboard"
    events.mkdir()
    uploader = EventFileUploader(SharedFSStorage(filled.storage), filled.trial_id, events)
    for chunk in (b"first", b"second"):
        with (events / "events.out").open("ab") as file:
            file.write(chunk)
        assert uploader.upload() == len(chunk)
    pattern = f"tensorboard-trial-{filled.trial_id}-*"
    assert len(list(filled.storage.glob(pattern))) == 2

    deleted = run_det(master, "e", "delete-tb-files", str(filled.experiment_id))
    assert deleted.exit_code == 0 and deleted.output == "", deleted.output
    assert list(filled.storage.glob(pattern)) == []
    assert all((filled.storage / uuid).exists() for uuid in filled.uuids)  # checkpoints stay
    again = run_pedl(master, "experiment", "delete-tb-files", str(filled.experiment_id))
    assert again.exit_code == 0 and "Deleted the TensorBoard files" in again.output

    (tmp_path / "paused").mkdir()
    paused = client.create_experiment(
        write_config(tmp_path / "paused", filled.storage),
        write_model_dir(tmp_path / "paused"),
        activate=False,
    )
    refused = run_det(master, "e", "delete-tb-files", str(paused.id))
    assert refused.exit_code == 1 and "once it has ended" in refused.output
