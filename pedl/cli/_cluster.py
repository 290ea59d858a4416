"""``det``'s cluster views on one PEDL master: ``job list``, ``slot list``, ``agent list``,
``master info``, ``master config``. A PEDL master is its own single agent; its jobs are its
experiments' trials that run or wait for slots (``GET /cluster``)."""

from __future__ import annotations

import time
from typing import Any

import click
import yaml
from rich.table import Table

from pedl.cli._aliases import AliasGroup
from pedl.cli._context import console, current_client, json_option, print_json

MASTER_LOG_PAGE = 10_000
"""The most lines one ``GET /master/logs`` returns."""
AGENT_ID = "master"
"""The one agent a PEDL master has: itself."""


def _cluster() -> dict[str, Any]:
    cluster: dict[str, Any] = current_client().session.get("/cluster")
    return cluster


@click.group("job", cls=AliasGroup)
def job() -> None:
    """Inspect the job queue (running and queued trials)."""


@job.command("list")
@json_option
def list_jobs(as_json: bool) -> None:
    """List the trials that run or wait for slots, running first."""
    cluster = _cluster()
    rows = [
        {
            "trial_id": t["trial_id"],
            "experiment_id": t["experiment_id"],
            "state": "RUNNING",
            "slots": t["slots"],
            "reason": None,
        }
        for t in cluster["running"]
    ] + [
        {
            "trial_id": t["trial_id"],
            "experiment_id": t["experiment_id"],
            "state": "QUEUED",
            "slots": None,
            "reason": t.get("reason"),
        }
        for t in cluster["queued"]
    ]
    if as_json:
        print_json(rows)
        return
    table = Table("Position", "Experiment", "Trial", "State", "Slots", "Why waiting")
    for position, row in enumerate(rows):
        table.add_row(
            str(position),
            str(row["experiment_id"]),
            str(row["trial_id"]),
            row["state"],
            "-" if row["slots"] is None else str(row["slots"]),
            row["reason"] or "",
        )
    console().print(table)


def _slots(cluster: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per slot; the running trials fill them in order."""
    owners: list[dict[str, Any]] = []
    for running in cluster["running"]:
        owners.extend([running] * int(running["slots"]))
    rows = []
    for slot in range(int(cluster["slots_total"])):
        owner = owners[slot] if slot < len(owners) else None
        rows.append(
            {
                "agent_id": AGENT_ID,
                "slot_id": slot,
                "enabled": cluster.get("halted") is None,
                "trial_id": owner["trial_id"] if owner else None,
                "experiment_id": owner["experiment_id"] if owner else None,
            }
        )
    return rows


def _slot_list(as_json: bool) -> None:
    rows = _slots(_cluster())
    if as_json:
        print_json(rows)
        return
    table = Table("Agent", "Slot", "Enabled", "Trial", "Experiment")
    for row in rows:
        table.add_row(
            row["agent_id"],
            str(row["slot_id"]),
            str(row["enabled"]),
            "-" if row["trial_id"] is None else str(row["trial_id"]),
            "-" if row["experiment_id"] is None else str(row["experiment_id"]),
        )
    console().print(table)


@click.group("slot", cls=AliasGroup)
def slot() -> None:
    """Inspect the master's slots."""


@slot.command("list")
@json_option
def list_slots(as_json: bool) -> None:
    """List the slots and the trial using each."""
    _slot_list(as_json)


@click.group("agent", cls=AliasGroup)
def agent() -> None:
    """Inspect the agents (a PEDL master is its own one agent)."""


@agent.command("list")
@json_option
def list_agents(as_json: bool) -> None:
    """List the agents: the master itself, with its slots."""
    cluster = _cluster()
    row = {
        "id": AGENT_ID,
        "address": current_client().master,
        "slots": cluster["slots_total"],
        "slots_used": cluster["slots_used"],
        "enabled": cluster.get("halted") is None,
        "halted": cluster.get("halted"),
    }
    if as_json:
        print_json([row])
        return
    table = Table("Agent", "Address", "Slots", "Used", "Enabled")
    table.add_row(
        AGENT_ID, row["address"], str(row["slots"]), str(row["slots_used"]), str(row["enabled"])
    )
    console().print(table)


@agent.command("list-slots")
@json_option
def agent_slots(as_json: bool) -> None:
    """The slots of the agent (as `slot list`)."""
    _slot_list(as_json)


@click.group("master", cls=AliasGroup)
def master_views() -> None:
    """Inspect the master (`pedl master` alone runs one)."""


@master_views.command("info")
@json_option
def info(as_json: bool) -> None:
    """Show the master's version, address, slots and request limits."""
    client = current_client()
    data = dict(client.session.get("/master"))
    cluster = _cluster()
    data.update(
        master=client.master,
        slots_total=cluster["slots_total"],
        slots_used=cluster["slots_used"],
        halted=cluster.get("halted"),
    )
    if as_json:
        print_json(data)
        return
    out = console()
    for key in ("version", "master", "slots_total", "slots_used", "halted"):
        out.print(f"{key}: {data[key]}", markup=False, highlight=False)
    for key, value in data.get("limits", {}).items():
        out.print(f"limits.{key}: {value}", markup=False, highlight=False)


@master_views.command("config")
@json_option
def config(as_json: bool) -> None:
    """Show the settings the master runs with, secrets masked (administrators)."""
    settings = current_client().session.get("/master/config")
    if as_json:
        print_json(settings)
    else:
        click.echo(yaml.safe_dump(settings, sort_keys=False), nl=False)


@master_views.command("logs")
@click.option("-f", "--follow", is_flag=True, help="Keep printing new lines (Ctrl-C stops).")
@click.option(
    "--tail",
    type=click.IntRange(0, MASTER_LOG_PAGE),
    default=None,
    help=f"Only the last N lines (at most {MASTER_LOG_PAGE:,}).",
)
@click.option(
    "--interval",
    type=click.FloatRange(min=0.01),
    default=1.0,
    show_default=True,
    help="Seconds between polls with --follow.",
)
def logs(follow: bool, tail: int | None, interval: float) -> None:
    """Show the master's own latest log lines (administrators; it keeps its latest 10,000)."""
    session = current_client().session
    params: dict[str, Any] = {"tail": tail} if tail is not None else {"limit": MASTER_LOG_PAGE}
    cursor: int | None = None
    while True:
        lines = session.get("/master/logs", params=params)
        for line in lines:
            click.echo(f"{line['timestamp']} [{line['level']}]: {line['message']}")
        if lines:
            cursor = int(lines[-1]["seq"])
        if not follow:
            return
        if len(lines) < MASTER_LOG_PAGE or "tail" in params:
            time.sleep(interval)
        params = {"limit": MASTER_LOG_PAGE}
        if cursor is not None:
            params["after_seq"] = cursor


MASTER_VIEWS = frozenset(master_views.commands)
"""``pedl master VIEW``: these run :data:`master_views`; anything else runs the master."""
