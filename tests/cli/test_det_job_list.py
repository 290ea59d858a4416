"""``det job list`` golden: det 0.38.1's ``determined/cli/job.py`` ``ls`` table (presto, or
CSV with ``--csv``), its headers in its order, one row per job (a PEDL job is an experiment
whose trials run or wait), on a real master; ``--json``/``--yaml`` as det's ``{"jobs": [...]}``
of ``v1Job`` records."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import yaml

from pedl.cli._presto import presto
from pedl.client import Client
from pedl.vocabulary import TrialState
from tests.accounts import ADMIN
from tests.cli.test_det_command import DET, signed_in
from tests.cli.test_det_output import check_csv, check_table
from tests.client.helpers import LiveMaster, write_config, write_model_dir
from tests.waits import scaled

# determined/cli/job.py, ls: headers ("Priority": the scheduler is a priority one).
JOB_LIST = [
    "#",
    "ID",
    "Type",
    "Job Name",
    "Priority",
    "Submitted",
    "Slots (acquired/needed)",
    "State",
    "User",
]


def det_out(env: dict[str, str], *args: str) -> str:
    result = subprocess.run([str(DET), *args], env=env, capture_output=True, timeout=scaled(120))
    assert result.returncode == 0, result.stderr.decode()
    return result.stdout.decode()


def test_job_list(master: LiveMaster, client: Client, tmp_path: Path) -> None:
    storage = tmp_path / "checkpoints"
    storage.mkdir()
    config, model_dir = write_config(tmp_path, storage), write_model_dir(tmp_path)
    running = client.create_experiment(config, model_dir, activate=False)
    waiting = client.create_experiment(config, model_dir, activate=False)
    waiting.set_priority(7)
    held, _ = master.create_trial(running.id)
    master.set_trial_state(held, TrialState.RUNNING)
    wanting, _ = master.create_trial(running.id)
    master.set_trial_state(wanting, TrialState.QUEUED)
    queued, _ = master.create_trial(waiting.id)
    master.set_trial_state(queued, TrialState.QUEUED)
    env = signed_in(master, tmp_path)

    for args in (["job", "list"], ["j", "ls"], ["job"]):
        rows = check_table(det_out(env, *args), JOB_LIST)
        mine = {r[1]: r for r in rows if r[1] in (str(running.id), str(waiting.id))}
        assert mine[str(running.id)][2:5] == ["TYPE_EXPERIMENT", f"sdk-test ({running.id})", "42"]
        assert mine[str(running.id)][6:] == ["1/2", "STATE_SCHEDULED", ADMIN]
        assert mine[str(waiting.id)][2:5] == ["TYPE_EXPERIMENT", f"sdk-test ({waiting.id})", "7"]
        assert mine[str(waiting.id)][6:] == ["0/1", "STATE_QUEUED", ADMIN]
        # det's str() of a UTC datetime; "#" counts the jobs ahead: running first
        assert re.fullmatch(
            r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(\.\d{6})?\+00:00", mine[str(running.id)][5]
        )
        assert int(mine[str(running.id)][0]) < int(mine[str(waiting.id)][0])
        assert [int(r[0]) for r in rows] == list(range(len(rows)))

    parsed = check_csv(det_out(env, "job", "list", "--csv"), JOB_LIST)
    assert [str(running.id), "TYPE_EXPERIMENT"] in [r[1:3] for r in parsed]
    reversed_ids = [r[1] for r in check_table(det_out(env, "job", "list", "--reverse"), JOB_LIST)]
    assert reversed_ids == [r[1] for r in parsed][::-1]
    one = check_table(det_out(env, "j", "ls", "--pages", "1", "--limit", "1"), JOB_LIST)
    assert len(one) == 1

    jobs = json.loads(det_out(env, "job", "list", "--json"))["jobs"]
    job = next(j for j in jobs if j["jobId"] == str(waiting.id))
    assert job["summary"]["state"] == "STATE_QUEUED" and job["requestedSlots"] == 1
    assert job["type"] == "TYPE_EXPERIMENT" and job["username"] == ADMIN
    assert yaml.safe_load(det_out(env, "job", "list", "--yaml"))["jobs"] == jobs
    both = subprocess.run(
        [str(DET), "job", "list", "--json", "--csv"], env=env, capture_output=True, text=True
    )
    assert both.returncode == 2 and "not allowed with" in both.stderr

    # pedl keeps its own table, one row per trial
    pedl = subprocess.run(
        [str(DET.with_name("pedl")), "--master", master.url, "job", "list"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert " | " not in pedl.splitlines()[0] and "Why waiting" in pedl


def test_job_table_as_tabulate_writes_it() -> None:
    """The table of two jobs as det 0.38.1 prints it (``tabulate(values, headers,
    tablefmt="presto")``, written out by hand from det's rules)."""
    from pedl.cli import _det_tables

    job = {
        "allocatedSlots": 1,
        "entityId": "3",
        "jobId": "3",
        "name": "mnist",
        "requestedSlots": 2,
        "submissionTime": "2026-11-29T15:00:01.250000Z",
        "type": "TYPE_EXPERIMENT",
        "username": "admin",
        "priority": 42,
        "summary": {"jobsAhead": 0, "state": "STATE_SCHEDULED"},
    }
    headers, rows = _det_tables.jobs([job])
    assert presto(headers, rows) == (
        "   # |   ID | Type            | Job Name   |   Priority | Submitted"
        "                        | Slots (acquired/needed)   | State           | User\n"
        "-----+------+-----------------+------------+------------+----------------------------------"
        "+---------------------------+-----------------+--------\n"
        "   0 |    3 | TYPE_EXPERIMENT | mnist (3)  |         42 | 2026-11-29 15:00:01.250000+00:00"
        " | 1/2                       | STATE_SCHEDULED | admin"
    )
