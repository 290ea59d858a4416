"""``det``'s cluster views on one PEDL master: ``job list``, ``job update`` (``update-batch``),
``slot list``/``enable``/``disable``, ``agent list``/``enable``/``disable``, ``master info``,
``master config [show|set]``, ``master cluster-message set/get/clear``. A PEDL master is its
own single agent, ``master``, whose slots its trials hold (``GET /agents``); its jobs are its
experiments (their trials run or wait for slots, ``GET /cluster``). A disabled slot takes no
new trial, a disabled agent none at all; without ``--drain`` the trials running there
checkpoint and stop, and run again from that checkpoint once slots are enabled (det kills
them); with it they finish. ``det`` prints det 0.38.1's tables (``--csv`` too); ``pedl`` its
own."""

from __future__ import annotations

import time
from datetime import datetime
from typing import Any
from urllib.parse import urlsplit

import click
import yaml
from rich.table import Table

from pedl.cli import _det_tables as det_tables
from pedl.cli._aliases import AliasGroup
from pedl.cli._context import (
    console,
    csv_option,
    current_client,
    det_output,
    json_option,
    paginate,
    pagination_options,
    print_det_table,
    print_json,
)
from pedl.client import (
    Agent,
    Slot,
    disable_agent,
    disable_slot,
    enable_agent,
    enable_slot,
    get_agent,
)

MASTER_LOG_PAGE = 10_000
"""The most lines one ``GET /master/logs`` returns."""
AGENT_ID = "master"
"""The one agent a PEDL master has: itself."""
DEFAULT_PRIORITY = 42
"""An experiment's priority when its config names none (``pedl.master.scheduler``'s)."""


def _cluster() -> dict[str, Any]:
    cluster: dict[str, Any] = current_client().session.get("/cluster")
    return cluster


@click.group("job", cls=AliasGroup, invoke_without_command=True)
@click.pass_context
def job(ctx: click.Context) -> None:
    """Inspect the job queue (running and queued trials).

    Alone: ``list``."""
    if ctx.invoked_subcommand is None:
        ctx.invoke(list_jobs)


@job.command("list")
@click.option(
    "-p", "--resource-pool", default=None, help="Only this pool's jobs (PEDL: `default`)."
)
@pagination_options
@click.option("--reverse", is_flag=True, help="Last in the queue first.")
@json_option
@click.option("--yaml", "as_yaml", is_flag=True, help="Print YAML (det's jobs).")
@click.option("--table", "as_table", is_flag=True, help="Print the table (the default).")
@csv_option
def list_jobs(
    resource_pool: str | None,
    limit: int,
    offset: int,
    pages: str,
    reverse: bool,
    as_json: bool,
    as_yaml: bool,
    as_table: bool,
    as_csv: bool,
) -> None:
    """List the jobs (experiments whose trials run or wait for slots), in the queue's order:
    running first. `pedl`: one row per trial."""
    chosen = [
        name
        for name, given in (
            ("--json", as_json),
            ("--yaml", as_yaml),
            ("--table", as_table),
            ("--csv", as_csv),
        )
        if given
    ]
    if len(chosen) > 1:
        raise click.UsageError(f"argument {chosen[1]}: not allowed with argument {chosen[0]}")
    cluster = _cluster()
    if det_output() or as_csv or as_yaml:
        if resource_pool is not None and resource_pool != det_tables.RESOURCE_POOL:
            raise click.ClickException(f"Pool {resource_pool} not found")
        jobs = _det_jobs(cluster)
        if reverse:
            jobs.reverse()
        jobs = paginate(jobs, limit, offset, pages)
        if as_json or as_yaml:
            data = {"jobs": jobs}
            if as_json:
                print_json(data)
            else:
                _print_yaml(data)
            return
        print_det_table(det_tables.jobs(jobs), as_csv)
        return
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
    if reverse:
        rows.reverse()
    rows = paginate(rows, limit, offset, pages)
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


def _det_jobs(cluster: dict[str, Any]) -> list[dict[str, Any]]:
    """``GET /cluster`` as det's ``v1Job`` records (``GET /api/v1/jobs-v2``): one per
    experiment whose trials run or wait (its job id is its experiment id), those running
    first, then the waiting ones in the scheduler's order (lower priority first, then the
    oldest trial); ``allocatedSlots``: what its running trials hold, ``requestedSlots``: that
    plus what its waiting trials need; ``summary.jobsAhead``: the jobs before it."""
    order: list[int] = []
    allocated: dict[int, int] = {}
    queued: dict[int, int] = {}
    for running in cluster["running"]:
        exp_id = int(running["experiment_id"])
        if exp_id not in allocated:
            order.append(exp_id)
        allocated[exp_id] = allocated.get(exp_id, 0) + int(running["slots"])
    waiting: list[int] = []
    for trial in cluster["queued"]:
        exp_id = int(trial["experiment_id"])
        queued[exp_id] = queued.get(exp_id, 0) + 1
        if exp_id not in allocated and exp_id not in waiting:
            waiting.append(exp_id)
    client = current_client()
    experiments = {
        e.id: e
        for e in client.list_experiments(experiment_ids=order + waiting, archived=None)
        if e.id in allocated or e.id in queued
    }

    def resources(exp_id: int) -> dict[str, Any]:
        found = experiments.get(exp_id)
        value = found.config.get("resources") if found is not None else None
        return value if isinstance(value, dict) else {}

    def priority(exp_id: int) -> int:
        value = resources(exp_id).get("priority")
        return value if isinstance(value, int) else DEFAULT_PRIORITY

    arrival = {exp_id: i for i, exp_id in enumerate(waiting)}
    waiting.sort(key=lambda exp_id: (priority(exp_id), arrival[exp_id]))
    jobs: list[dict[str, Any]] = []
    for exp_id in order + waiting:
        found = experiments.get(exp_id)
        if found is None:  # deleted meanwhile
            continue
        per_trial = resources(exp_id).get("slots_per_trial")
        per_trial = per_trial if isinstance(per_trial, int) else 1
        weight = resources(exp_id).get("weight")
        jobs.append(
            {
                "allocatedSlots": allocated.get(exp_id, 0),
                "entityId": str(exp_id),
                "isPreemptible": True,
                "jobId": str(exp_id),
                "name": found.name or "",
                "requestedSlots": allocated.get(exp_id, 0) + per_trial * queued.get(exp_id, 0),
                "resourcePool": found.config.get("resources", {}).get("resource_pool")
                or det_tables.RESOURCE_POOL,
                "submissionTime": found.created_at.isoformat().replace("+00:00", "Z"),
                "type": "TYPE_EXPERIMENT",
                "username": found.owner,
                "workspaceId": found.workspace_id,
                "priority": priority(exp_id),
                "progress": found.progress,
                "summary": {
                    "jobsAhead": len(jobs),
                    "state": "STATE_SCHEDULED" if exp_id in allocated else "STATE_QUEUED",
                },
                "weight": float(weight) if isinstance(weight, int | float) else 1.0,
            }
        )
    return jobs


def _job_experiment(job_id: str) -> int:
    """The experiment a job id names: PEDL's jobs are its experiments (``job list``'s
    Experiment column)."""
    try:
        experiment_id = int(job_id)
    except ValueError:
        raise click.ClickException(
            f"job {job_id!r}: PEDL's job ids are experiment ids (the Experiment column of "
            "`det job list`)"
        ) from None
    if experiment_id < 1:
        raise click.ClickException(f"job {job_id!r}: an experiment id is 1 or more")
    return experiment_id


_NO_POOLS = (
    "PEDL moves no job between resource pools: create the experiment again with "
    "resources.resource_pool set (the ray resource manager's pools)"
)


def _update_job(job_id: str, priority: int | None, weight: float | None) -> None:
    exp = current_client().get_experiment(_job_experiment(job_id))
    if priority is not None:
        exp.set_priority(priority)
    if weight is not None:
        exp.set_weight(weight)


@job.command("update")
@click.argument("job_id")
@click.option(
    "-p", "--priority", type=int, default=None, help="The new priority (1: first, to 99)."
)
@click.option("-w", "--weight", type=float, default=None, help="The new fair-share weight.")
@click.option("--resource-pool", default=None, help="Not in PEDL (jobs stay in their pool).")
def update_job(
    job_id: str, priority: int | None, weight: float | None, resource_pool: str | None
) -> None:
    """Change a job's priority or weight: JOB_ID is its experiment's id (PEDL's scheduler
    orders by priority, then by fair share of the weight)."""
    given = [
        name
        for name, value in (
            ("-p/--priority", priority),
            ("-w/--weight", weight),
            ("--resource-pool", resource_pool),
        )
        if value is not None
    ]
    if len(given) > 1:
        raise click.UsageError(f"argument {given[1]}: not allowed with argument {given[0]}")
    if not given:
        raise click.UsageError("give one of -p/--priority, -w/--weight and --resource-pool")
    if resource_pool is not None:
        raise click.ClickException(f"--resource-pool: {_NO_POOLS}")
    _update_job(job_id, priority, weight)


_BATCH_OPERATIONS = ("priority", "weight", "resource_pool")


@job.command("update-batch")
@click.argument("operation", nargs=-1, required=True)
def update_batch(operation: tuple[str, ...]) -> None:
    """Change several jobs: each OPERATION is JOB_ID.priority=N, JOB_ID.weight=W (JOB_ID: the
    experiment's id)."""
    for text in operation:
        values = text.split(".")
        if len(values) != 2:
            raise click.ClickException(
                f"Job {values[0]} and its operation have an invalid format. "
                "Please ensure the update is formatted as <jobID>.<operation>=<value>."
            )
        job_id, operand = values[0], values[1].split("=")
        if len(operand) != 2:
            raise click.ClickException(
                f"The operation for job {job_id} has invalid format. "
                "Please ensure the operation is formatted as <operation>=<value>."
            )
        name = operand[0].replace("-", "_")
        if name not in _BATCH_OPERATIONS:
            raise click.ClickException(
                f"Invalid operation {operand[0]} specified for job {job_id}. "
                f"Supported commands include: {_BATCH_OPERATIONS}."
            )
        if name == "resource_pool":
            raise click.ClickException(f"{text}: {_NO_POOLS}")
        try:
            number = float(operand[1]) if name == "weight" else int(operand[1])
        except ValueError:
            raise click.ClickException(f"{text}: {operand[1]!r} is not a number") from None
        if name == "priority":
            _update_job(job_id, int(number), None)
        else:
            _update_job(job_id, None, float(number))


def _agent() -> Agent:
    return get_agent(AGENT_ID, client=current_client())


def _allocation(slot: Slot) -> str:
    """det's task and allocation id of the trial holding a slot: ``exp-E-trial-T`` (never
    a number: det's tables would right-align it and write ``3.10`` as ``3.1``)."""
    return f"exp-{slot.experiment_id}-trial-{slot.trial_id}"


def _task_name(slot: Slot) -> str:
    """det's task name of a trial: ``Trial T (Experiment E)``."""
    return f"Trial {slot.trial_id} (Experiment {slot.experiment_id})"


def _det_slots(agent: Agent) -> list[dict[str, Any]]:
    """``determined.cli.agent.list_slots``'s rows."""
    return [
        {
            "agent_id": agent.id,
            "resource_pools": det_tables.RESOURCE_POOL,
            "slot_id": str(slot.slot_id),
            "enabled": slot.enabled,
            "draining": slot.draining,
            "allocation_id": "FREE" if slot.trial_id is None else _allocation(slot),
            "task_name": "FREE" if slot.trial_id is None else _task_name(slot),
            "type": slot.device_type,
            "device": slot.device,
        }
        for slot in agent.slots
    ]


_SLOT_HEADERS = [
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
"""``determined.cli.agent.list_slots``'s headers."""


def _slot_list(as_json: bool, as_csv: bool) -> None:
    if as_json and as_csv:
        raise click.UsageError("argument --json: not allowed with argument --csv")
    agent = _agent()
    if det_output() or as_csv:
        rows = _det_slots(agent)
        if as_json:
            print_json(rows)
            return
        print_det_table((_SLOT_HEADERS, [list(r.values()) for r in rows]), as_csv)
        return
    if as_json:
        print_json(
            [
                {
                    "agent_id": agent.id,
                    "slot_id": slot.slot_id,
                    "enabled": slot.enabled,
                    "draining": slot.draining,
                    "trial_id": slot.trial_id,
                    "experiment_id": slot.experiment_id,
                }
                for slot in agent.slots
            ]
        )
        return
    table = Table("Agent", "Slot", "Enabled", "Draining", "Trial", "Experiment")
    for slot in agent.slots:
        table.add_row(
            agent.id,
            str(slot.slot_id),
            str(slot.enabled),
            str(slot.draining),
            "-" if slot.trial_id is None else str(slot.trial_id),
            "-" if slot.experiment_id is None else str(slot.experiment_id),
        )
    console().print(table)


@click.group("slot", cls=AliasGroup, invoke_without_command=True)
@click.pass_context
def slot(ctx: click.Context) -> None:
    """Inspect the master's slots.

    Alone: ``list``."""
    if ctx.invoked_subcommand is None:
        ctx.invoke(list_slots)


@slot.command("list")
@json_option
@csv_option
def list_slots(as_json: bool, as_csv: bool) -> None:
    """List the slots: enabled or not, and the trial using each."""
    _slot_list(as_json, as_csv)


def _check_slot(agent_id: str, slot_id: int) -> None:
    if agent_id != AGENT_ID:
        raise click.ClickException(
            f"agent {agent_id!r} not found: a PEDL master is its own one agent, {AGENT_ID!r}"
        )
    total = len(_agent().slots)
    if not 0 <= slot_id < total:
        has = f"slots 0 to {total - 1}" if total else "no slots (it runs no experiments)"
        raise click.ClickException(f"slot {slot_id} not found: agent {AGENT_ID!r} has {has}")


@slot.command("enable")
@click.argument("agent_id")
@click.argument("slot_id", type=int)
def enable_slot_command(agent_id: str, slot_id: int) -> None:
    """Enable a slot: trials are given it again (administrators)."""
    _check_slot(agent_id, slot_id)
    enable_slot(agent_id, slot_id, client=current_client())
    click.echo(f"Enabled slot {slot_id} of agent {agent_id}")


@slot.command("disable")
@click.argument("agent_id")
@click.argument("slot_id", type=int)
@click.option(
    "--drain",
    is_flag=True,
    help="Let the trial on it finish (PEDL; det stops it: it checkpoints and runs again later).",
)
def disable_slot_command(agent_id: str, slot_id: int, drain: bool) -> None:
    """Disable a slot: no new trial is given it; the trial on it checkpoints and stops (it
    runs again from that checkpoint on another slot or later), or finishes with --drain
    (administrators)."""
    _check_slot(agent_id, slot_id)
    disable_slot(agent_id, slot_id, drain, client=current_client())
    click.echo(f"Disabled slot {slot_id} of agent {agent_id}")


@click.group("agent", cls=AliasGroup, invoke_without_command=True)
@click.pass_context
def agent(ctx: click.Context) -> None:
    """Inspect the agents (a PEDL master is its own one agent).

    Alone: ``list``."""
    if ctx.invoked_subcommand is None:
        ctx.invoke(list_agents_command)


_AGENT_HEADERS = [
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
"""``determined.cli.agent.list_agents``'s headers."""


@agent.command("list")
@json_option
@csv_option
def list_agents_command(as_json: bool, as_csv: bool) -> None:
    """List the agents: the master itself, with its slots, enabled or not."""
    if as_json and as_csv:
        raise click.UsageError("argument --json: not allowed with argument --csv")
    found = _agent()
    address = current_client().master
    running = {s.trial_id for s in found.slots if s.trial_id is not None}
    if det_output() or as_csv:
        row = {
            "id": found.id,
            "version": found.version,
            "registered_time": det_tables.format_time(found.registered_time),
            "num_slots": len(found.slots),
            "num_containers": len(running),
            "resource_pools": det_tables.RESOURCE_POOL,
            "enabled": found.enabled,
            "draining": found.draining,
            "addresses": urlsplit(address).hostname or address,
        }
        if as_json:
            print_json([row])
            return
        print_det_table((_AGENT_HEADERS, [list(row.values())]), as_csv)
        return
    record = {
        "id": AGENT_ID,
        "address": address,
        "slots": len(found.slots),
        "slots_used": found.slots_used,
        "enabled": found.enabled,
        "draining": found.draining,
        "halted": _cluster().get("halted"),
    }
    if as_json:
        print_json([record])
        return
    table = Table("Agent", "Address", "Slots", "Used", "Enabled", "Draining")
    table.add_row(
        AGENT_ID,
        address,
        str(record["slots"]),
        str(record["slots_used"]),
        str(found.enabled),
        str(found.draining),
    )
    console().print(table)


def _check_agent(agent_id: str | None, all_agents: bool, action: str) -> None:
    """det's checks of ``agent enable/disable``'s arguments; the one agent is ``master``."""
    if agent_id and all_agents:
        raise click.UsageError("argument --all: not allowed with argument agent_id")
    if not (agent_id or all_agents):
        raise click.ClickException(
            f"Please pass agent id or --all option. See `det agent {action} --help` for details."
        )
    if agent_id and agent_id != AGENT_ID:
        raise click.ClickException(
            f"agent {agent_id!r} not found: a PEDL master is its own one agent, {AGENT_ID!r}"
        )


@agent.command("enable")
@click.argument("agent_id", required=False)
@click.option("--all", "all_agents", is_flag=True, help="Enable every agent (the one).")
def enable_agent_command(agent_id: str | None, all_agents: bool) -> None:
    """Enable the agent: trials start on its enabled slots again (administrators)."""
    _check_agent(agent_id, all_agents, "enable")
    enable_agent(AGENT_ID, client=current_client())
    click.echo(f"Enabled agent {AGENT_ID}.", err=True)


_TASK_HEADERS = [
    "Task ID",
    "Allocation ID",
    "Name",
    "Slots Needed",
    "Registered Time",
    "Agent",
    "Priority",
    "Resource Pool",
    "Ports",
]
"""``determined.cli.task.render_tasks``'s headers."""


@agent.command("disable")
@click.argument("agent_id", required=False)
@click.option("--all", "all_agents", is_flag=True, help="Disable every agent (the one).")
@click.option(
    "--drain",
    is_flag=True,
    help="Let the running trials finish (and print them); without it they checkpoint and "
    "stop, and run again from that checkpoint once the agent is enabled.",
)
@click.option("--csv", "as_csv", is_flag=True, help="Print the draining trials as CSV.")
@click.option("--json", "as_json", is_flag=True, help="Print the draining trials as JSON.")
def disable_agent_command(
    agent_id: str | None, all_agents: bool, drain: bool, as_csv: bool, as_json: bool
) -> None:
    """Disable the agent (the master itself): no new trial starts; its running trials
    checkpoint and stop (they run again from there once it is enabled), or finish with
    --drain (administrators)."""
    if as_json and as_csv:
        raise click.UsageError("argument --json: not allowed with argument --csv")
    _check_agent(agent_id, all_agents, "disable")
    found = disable_agent(AGENT_ID, drain, client=current_client())
    click.echo(f"Disabled agent {AGENT_ID}.", err=True)
    if not drain:
        return
    tasks: dict[str, dict[str, Any]] = {}
    for held in found.slots:
        if held.trial_id is None:
            continue
        task = tasks.setdefault(
            _allocation(held),
            {
                "taskId": _allocation(held),
                "allocationId": _allocation(held),
                "name": _task_name(held),
                "slotsNeeded": 0,
                "registeredTime": None,
                "agent": AGENT_ID,
                "resourcePool": det_tables.RESOURCE_POOL,
            },
        )
        task["slotsNeeded"] += 1
    if not (as_json or as_csv):
        if tasks:
            click.echo("Tasks still in progress on draining nodes.")
        else:
            click.echo("No tasks in progress on draining nodes.")
    if as_json:
        print_json(tasks)
        return
    rows = [
        [
            t["taskId"],
            t["allocationId"],
            t["name"],
            t["slotsNeeded"],
            None,
            AGENT_ID,
            det_tables.NOT_AVAILABLE,
            t["resourcePool"],
            "",
        ]
        for t in tasks.values()
    ]
    print_det_table((_TASK_HEADERS, rows), as_csv)


@agent.command("list-slots")
@json_option
@csv_option
def agent_slots(as_json: bool, as_csv: bool) -> None:
    """The slots of the agent (as `slot list`)."""
    _slot_list(as_json, as_csv)


@click.group("master", cls=AliasGroup)
def master_views() -> None:
    """Inspect the master (`pedl master` alone runs one)."""


def _cluster_message() -> dict[str, Any] | None:
    """The current cluster-wide message under det's names (``v1ClusterMessage``), or None."""
    answer = current_client().session.get("/master/cluster_message")
    message = answer.get("cluster_message")
    if not message:
        return None
    return {
        "message": message["message"],
        "startTime": message["start_time"],
        "createdTime": message["created_at"],
        "endTime": message["end_time"],
    }


def _print_yaml(data: Any) -> None:
    """det's ``print(util.yaml_safe_dump(data, default_flow_style=False))``: keys in their
    order, then a blank line."""
    click.echo(yaml.safe_dump(data, default_flow_style=False, sort_keys=False))


def _det_master_info(data: dict[str, Any]) -> dict[str, Any]:
    """``GET /master`` as det's ``v1GetMasterResponse.to_json()``: what PEDL does not have as
    a Determined master without it says it (no cluster id or name, no SSO, no RBAC)."""
    return {
        "clusterId": "",
        "clusterName": "",
        "hasCustomLogo": False,
        "masterId": "",
        "strictJobQueueControl": False,
        "version": data["version"],
        "branding": None,
        "clusterMessage": _cluster_message(),
        "externalLoginUri": None,
        "externalLogoutUri": None,
        "featureSwitches": [],
        "product": None,
        "rbacEnabled": False,
        "ssoProviders": None,
        "telemetryEnabled": False,
        "userManagementEnabled": True,
    }


yaml_option = click.option("--yaml", "as_yaml", is_flag=True, help="Print YAML (the default).")


@master_views.command("info")
@json_option
@yaml_option
def info(as_json: bool, as_yaml: bool) -> None:
    """Show the master's version, address, slots, request limits and cluster-wide message
    (`det`: det's fields, as YAML or --json)."""
    if as_json and as_yaml:
        raise click.UsageError("argument --yaml: not allowed with argument --json")
    client = current_client()
    data = dict(client.session.get("/master"))
    if det_output():
        shown = _det_master_info(data)
        if as_json:
            print_json(shown)
        else:
            _print_yaml(shown)
        return
    cluster = _cluster()
    message = _cluster_message()
    data.update(
        master=client.master,
        slots_total=cluster["slots_total"],
        slots_used=cluster["slots_used"],
        halted=cluster.get("halted"),
        cluster_message=message,
    )
    if as_json:
        print_json(data)
        return
    if as_yaml:
        _print_yaml(data)
        return
    out = console()
    for key in ("version", "master", "slots_total", "slots_used", "halted"):
        out.print(f"{key}: {data[key]}", markup=False, highlight=False)
    for key, value in data.get("limits", {}).items():
        out.print(f"limits.{key}: {value}", markup=False, highlight=False)
    if message is not None:
        until = message["endTime"] or "cleared"
        out.print(
            f"cluster_message: {message['message']} (from {message['startTime']} until {until})",
            markup=False,
            highlight=False,
        )


def _show_config(as_json: bool) -> None:
    settings = current_client().session.get("/master/config")
    if as_json:
        print_json(settings)
    elif det_output():
        _print_yaml(settings)
    else:
        click.echo(yaml.safe_dump(settings, sort_keys=False), nl=False)


@master_views.group("config", cls=AliasGroup, invoke_without_command=True)
@json_option
@yaml_option
@click.pass_context
def config(ctx: click.Context, as_json: bool, as_yaml: bool) -> None:
    """Show the settings the master runs with, secrets masked (administrators; as `config
    show`)."""
    if as_json and as_yaml:
        raise click.UsageError("argument --yaml: not allowed with argument --json")
    if ctx.invoked_subcommand is None:
        _show_config(as_json)


@config.command("show")
@json_option
@yaml_option
def show_config(as_json: bool, as_yaml: bool) -> None:
    """Show the settings the master runs with, secrets masked (administrators)."""
    if as_json and as_yaml:
        raise click.UsageError("argument --yaml: not allowed with argument --json")
    _show_config(as_json)


LOG_LEVELS = ("TRACE", "DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")


@config.command("set")
@click.option(
    "--log.level",
    "log_level",
    type=click.Choice(LOG_LEVELS),
    default=None,
    help="The least severe lines the master's log writes (until it restarts).",
)
@click.option(
    "--log.color",
    "log_color",
    type=click.Choice(["on", "off"]),
    default=None,
    help="Not in PEDL: the master's log has no colours.",
)
def set_config(log_level: str | None, log_color: str | None) -> None:
    """Change the master's log level until it restarts (administrators)."""
    if log_level is None and log_color is None:
        raise click.ClickException(
            "Please provide at least one argument to set master config. "
            "Currently, the supported fields are --log.level and --log.color."
        )
    if log_color is not None:
        raise click.ClickException(
            "--log.color: PEDL's master writes its log without colours; "
            "only --log.level can be set."
        )
    current_client().session.patch("/master/config", json={"log": {"level": log_level}})
    click.echo(
        "This will only make ephermeral changes to the master config, "
        "that will be lost if the user restarts the cluster.",
        err=True,
    )
    click.echo("Successfully made changes to the master config.")


@master_views.group("cluster-message", cls=AliasGroup)
def cluster_message() -> None:
    """Set, show or clear the message every user sees (administrators set and clear it)."""


_RFC3339 = "%Y-%m-%dT%H:%M:%SZ"


def _rfc3339(value: str | None, which: str) -> str | None:
    """det's check of ``--start``/``--end`` (``util.is_protobuf_timestamp``): a UTC time
    ending in ``Z``, to the second or finer."""
    if value is None:
        return None
    text = value.strip()
    try:
        datetime.fromisoformat(text[:-1] + "+00:00")
        ok = text.endswith("Z") and "T" in text
    except ValueError:
        ok = False
    if not ok:
        raise click.ClickException(
            f"{which} time must be RFC-3339, i.e. of the form YYYY-MM-DDThh:mm:ssZ"
        )
    return text


@cluster_message.command("set")
@click.option(
    "-s",
    "--start",
    default=None,
    help="When it starts to show (RFC 3339, e.g. '2021-10-26T23:17:12Z'); default now.",
)
@click.option(
    "-e",
    "--end",
    default=None,
    help="When it stops showing (RFC 3339); default: until cleared.",
)
@click.option(
    "-d",
    "--duration",
    default=None,
    help="How long it shows instead of --end: 24h, 5d, 2w, 1h30m.",
)
@click.option("-m", "--message", default=None, help="Its text.")
def set_message(
    start: str | None, end: str | None, duration: str | None, message: str | None
) -> None:
    """Set the cluster-wide message (replacing the current one)."""
    if end is not None and duration is not None:
        raise click.UsageError("argument -d/--duration: not allowed with argument -e/--end")
    if message is None:
        raise click.ClickException("Provide a message using the -m flag.")
    body = {
        "message": message,
        "start_time": _rfc3339(start, "Start"),
        "end_time": _rfc3339(end, "End"),
        "duration": duration,
    }
    current_client().session.put(
        "/master/cluster_message", json={k: v for k, v in body.items() if v is not None}
    )
    if not det_output():  # det prints nothing
        console().print("Set the cluster-wide message", markup=False)


@cluster_message.command("clear")
@click.option(
    "-c", "--clear", "clear_all", is_flag=True, help="Clear it (det's flag; it always is)."
)
def clear_message(clear_all: bool) -> None:
    """Clear the cluster-wide message."""
    current_client().session.delete("/master/cluster_message")
    if not det_output():  # det prints nothing
        console().print("Cleared the cluster-wide message", markup=False)


@cluster_message.command("get")
@json_option
@yaml_option
def get_message(as_json: bool, as_yaml: bool) -> None:
    """Show the cluster-wide message (det's YAML: clusterMessage, null when there is none)."""
    if as_json and as_yaml:
        raise click.UsageError("argument --yaml: not allowed with argument --json")
    shown = {"clusterMessage": _cluster_message()}
    if as_json:
        print_json(shown)
    else:
        _print_yaml(shown)


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
