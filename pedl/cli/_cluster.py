"""``det``'s cluster views on one PEDL master: ``job list``, ``job update`` (``update-batch``),
``slot list``, ``agent list``, ``master info``, ``master config [show|set]``, ``master
cluster-message set/get/clear``. A PEDL master is its own single agent; its jobs are its
experiments (their trials run or wait for slots, ``GET /cluster``). ``agent enable`` and
``slot enable`` change nothing (they always are); ``agent disable`` and ``slot disable`` exit
with one line naming what to use instead."""

from __future__ import annotations

import time
from datetime import datetime
from typing import Any

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


def _check_slot(agent_id: str, slot_id: int) -> None:
    if agent_id != AGENT_ID:
        raise click.ClickException(
            f"agent {agent_id!r} not found: a PEDL master is its own one agent, {AGENT_ID!r}"
        )
    total = int(_cluster()["slots_total"])
    if not 0 <= slot_id < total:
        has = f"slots 0 to {total - 1}" if total else "no slots (it runs no experiments)"
        raise click.ClickException(f"slot {slot_id} not found: agent {AGENT_ID!r} has {has}")


@slot.command("enable")
@click.argument("agent_id")
@click.argument("slot_id", type=int)
def enable_slot(agent_id: str, slot_id: int) -> None:
    """Enable a slot: a PEDL master's slots are always enabled (nothing changes)."""
    _check_slot(agent_id, slot_id)
    click.echo(f"Enabled slot {slot_id} of agent {agent_id}")


SLOT_DISABLE_REFUSED = (
    "det slot disable: PEDL schedules its slots as one pool and cannot take one out; to run "
    "fewer trials at once cap the experiments (`det experiment set max-slots ID N`), or "
    "restart the master with fewer slots (`pedl master --cpu-slots N`, CUDA_VISIBLE_DEVICES)."
)


@slot.command("disable")
@click.argument("agent_id")
@click.argument("slot_id", type=int)
def disable_slot(agent_id: str, slot_id: int) -> None:
    """Not in PEDL: its slots are one pool (cap experiments with max-slots instead)."""
    click.echo(SLOT_DISABLE_REFUSED, err=True)
    raise SystemExit(1)


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
def enable_agent(agent_id: str | None, all_agents: bool) -> None:
    """Enable the agent: a PEDL master's one agent is always enabled (nothing changes)."""
    _check_agent(agent_id, all_agents, "enable")
    click.echo(f"Enabled agent {AGENT_ID}.", err=True)


AGENT_DISABLE_REFUSED = (
    "det agent disable: a PEDL master is its own one agent and is never disabled; to start no "
    "new trials, pause the experiments (`det experiment pause ID`) or cap them "
    "(`det experiment set max-slots ID N`), and stop the master to take the machine away."
)


@agent.command("disable")
@click.argument("agent_id", required=False)
@click.option("--all", "all_agents", is_flag=True, help="Disable every agent.")
@click.option("--drain", is_flag=True, help="Let the running trials finish.")
@click.option("--csv", "as_csv", is_flag=True, help="Print as CSV.")
@click.option("--json", "as_json", is_flag=True, help="Print as JSON.")
def disable_agent(
    agent_id: str | None, all_agents: bool, drain: bool, as_csv: bool, as_json: bool
) -> None:
    """Not in PEDL: its one agent is the master itself (pause experiments instead)."""
    _check_agent(agent_id, all_agents, "disable")
    click.echo(AGENT_DISABLE_REFUSED, err=True)
    raise SystemExit(1)


@agent.command("list-slots")
@json_option
def agent_slots(as_json: bool) -> None:
    """The slots of the agent (as `slot list`)."""
    _slot_list(as_json)


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
