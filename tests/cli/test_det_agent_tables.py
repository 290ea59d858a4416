"""``det agent list`` and ``det slot list`` golden: det 0.38.1's ``determined/cli/agent.py``
tables (``list_agents``, ``list_slots``), presto or CSV, on a real master (API-only: the one
agent, no slots); the tables as tabulate writes them (expected text from ``tabulate.tabulate(
rows, headers, tablefmt="presto")`` of det's rows)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pedl
from pedl.cli._presto import presto
from tests.cli.test_det_command import DET, signed_in
from tests.cli.test_det_output import check_csv, check_table
from tests.client.helpers import LiveMaster
from tests.waits import scaled

AGENT_LIST = [
    "Agent ID",
    "Version",
    "Registered Time",
    "Slots",
    "Containers",
    "Resource Pool",
    "Enabled",
    "Draining",
    "Addresses",
]
SLOT_LIST = [
    "Agent ID",
    "Resource Pool",
    "Slot ID",
    "Enabled",
    "Draining",
    "Allocation ID",
    "Task Name",
    "Type",
    "Device",
]


def det_out(env: dict[str, str], *args: str) -> str:
    result = subprocess.run([str(DET), *args], env=env, capture_output=True, timeout=scaled(120))
    assert result.returncode == 0, result.stderr.decode()
    return result.stdout.decode()


def test_agent_and_slot_lists(master: LiveMaster, tmp_path: Path) -> None:
    env = signed_in(master, tmp_path)
    for args in (["agent", "list"], ["a", "ls"], ["agent"]):
        (row,) = check_table(det_out(env, *args), AGENT_LIST)
        assert row[:2] == ["master", pedl.__version__]
        assert row[3:] == ["0", "0", "default", "True", "False", "127.0.0.1"]
    (parsed,) = check_csv(det_out(env, "agent", "list", "--csv"), AGENT_LIST)
    assert parsed[0] == "master"
    (shown,) = json.loads(det_out(env, "agent", "list", "--json"))
    assert list(shown) == [
        "id",
        "version",
        "registered_time",
        "num_slots",
        "num_containers",
        "resource_pools",
        "enabled",
        "draining",
        "addresses",
    ]
    for args in (["slot", "list"], ["s", "ls"], ["agent", "list-slots"]):
        assert check_table(det_out(env, *args), SLOT_LIST) == []
    assert check_csv(det_out(env, "slot", "list", "--csv"), SLOT_LIST) == []


def test_the_tables_as_tabulate_writes_them() -> None:
    agent = [["master", "0.1.0", "2026-11-29 15:00:01+0000", 2, 1, "default", False, True, "h"]]
    assert presto(AGENT_LIST, agent) == (
        " Agent ID   | Version   | Registered Time          |   Slots |   Containers | "
        "Resource Pool   | Enabled   | Draining   | Addresses\n"
        "------------+-----------+--------------------------+---------+--------------+"
        "-----------------+-----------+------------+-------------\n"
        " master     | 0.1.0     | 2026-11-29 15:00:01+0000 |       2 |            1 | "
        "default         | False     | True       | h"
    )
    slots = [
        [
            "master",
            "default",
            "0",
            True,
            False,
            "exp-3-trial-7",
            "Trial 7 (Experiment 3)",
            "cpu",
            "x",
        ],
        ["master", "default", "1", False, False, "FREE", "FREE", "cpu", "x"],
    ]
    assert presto(SLOT_LIST, slots) == (
        " Agent ID   | Resource Pool   |   Slot ID | Enabled   | Draining   | Allocation ID   "
        "| Task Name              | Type   | Device\n"
        "------------+-----------------+-----------+-----------+------------+-----------------"
        "+------------------------+--------+----------\n"
        " master     | default         |         0 | True      | False      | exp-3-trial-7   "
        "| Trial 7 (Experiment 3) | cpu    | x\n"
        " master     | default         |         1 | False     | False      | FREE            "
        "| FREE                   | cpu    | x"
    )
