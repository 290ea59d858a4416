"""What ``det`` 0.38.1 prints for PEDL's experiments, trials, checkpoints, users, models,
TensorBoards and templates: det's headers in det's order, and rows of PEDL's records in them.

Each function returns ``(headers, rows)`` for :func:`pedl.cli._presto.tabulate_or_csv`, and
names the function of ``determined.cli`` it follows. What PEDL does not have is written as det
writes it for a cluster without it: one resource pool, ``default``; one workspace,
``Uncategorized`` (id 1); no parent experiment, display name or agent user (``N/A`` where det
renders objects, an empty cell where it tabulates rows).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from typing import Any

import yaml

from pedl.client import Checkpoint, Experiment, MetricRow, Trial, User

Table = tuple[list[str], list[list[Any]]]

RESOURCE_POOL = "default"
WORKSPACE = "Uncategorized"
WORKSPACE_ID = 1
NOT_AVAILABLE = "N/A"
"""``determined.cli.render``'s ``_DEFAULT_VALUE``: a missing field of a rendered object."""


def format_time(value: datetime | None) -> str | None:
    """``render.format_time``: UTC, ``%Y-%m-%d %H:%M:%S%z``."""
    if value is None:
        return None
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S%z")


def format_percent(value: float | None) -> str | None:
    """``render.format_percent``: one decimal."""
    return None if value is None else f"{value:.1%}"


def sizeof_fmt(value: float) -> str:
    """``determined.common.util.sizeof_fmt``."""
    for unit in ("", "K", "M", "G", "T", "P", "E", "Z"):
        if abs(value) < 1024.0:
            return f"{value:3.1f}{unit}B"
        value /= 1024.0
    return f"{value:.1f}YB"


def experiments(items: Iterable[Experiment], *, show_archived: bool) -> Table:
    """``determined.cli.experiment.list_experiments`` (``--all`` adds ``Archived``)."""
    headers = [
        "ID",
        "Owner",
        "Name",
        "Parent ID",
        "State",
        "Progress",
        "Started",
        "Ended",
        "Resource Pool",
    ]
    if show_archived:
        headers.append("Archived")
    rows = []
    for e in items:
        row: list[Any] = [
            e.id,
            e.owner,
            e.name,
            None,
            str(e.state),
            format_percent(e.progress),
            format_time(e.created_at),
            format_time(e.ended_at),
            RESOURCE_POOL,
        ]
        if show_archived:
            row.append(bool(e.to_dict().get("archived", False)))
        rows.append(row)
    return headers, rows


def experiment_summary(items: Iterable[Experiment]) -> Table:
    """``determined.cli.experiment.describe``'s first table ("Experiment:")."""
    headers = [
        "Experiment ID",
        "State",
        "Progress",
        "Started",
        "Ended",
        "Name",
        "Description",
        "Archived",
        "Resource Pool",
        "Labels",
    ]
    rows = []
    for e in items:
        record = e.to_dict()
        rows.append(
            [
                e.id,
                str(e.state),
                format_percent(e.progress),
                format_time(e.created_at),
                format_time(e.ended_at),
                e.name,
                record.get("description") or "",
                bool(record.get("archived", False)),
                RESOURCE_POOL,
                ", ".join(sorted(record.get("labels") or [])),
            ]
        )
    return headers, rows


def experiment_trials(trials: Iterable[Trial]) -> Table:
    """``determined.cli.experiment.describe``'s second table ("Trials:")."""
    headers = ["Trial ID", "Experiment ID", "State", "Started", "Ended", "H-Params"]
    rows = [
        [
            t.id,
            t.experiment_id,
            str(t.state),
            format_time(t.created_at),
            format_time(t.ended_at),
            json.dumps(t.hparams, indent=4),
        ]
        for t in trials
    ]
    return headers, rows


def experiment_workloads(
    trials: Iterable[tuple[Trial, Sequence[MetricRow], Sequence[Checkpoint]]],
) -> Table:
    """``determined.cli.experiment.describe``'s third table ("Workloads:", without
    ``--metrics``): one row per trial and batch count, its training, validation and checkpoint
    reports merged."""
    headers = [
        "Trial ID",
        "# of Batches",
        "State",
        "Report Time",
        "Checkpoint State",
        "Checkpoint Report Time",
        "Validation State",
        "Validation Report Time",
    ]
    rows: list[list[Any]] = []
    for trial, metric_rows, checkpoints in trials:
        merged: dict[int, list[Any]] = {}
        for kind, batches, when, state in [
            *((m.kind, m.total_batches, m.reported_at, None) for m in metric_rows),
            *(("checkpoint", c.total_batches, c.created_at, str(c.state)) for c in checkpoints),
        ]:
            reported = format_time(when)
            row = merged.setdefault(batches, [trial.id, batches, "", reported, "", None, "", None])
            row[3] = max(row[3] or "", reported or "")
            if kind == "checkpoint":
                row[4], row[5] = state, reported
                row[2] = row[2] or state
            elif kind == "validation":
                row[6], row[7] = "COMPLETED", reported
                row[2] = row[2] or "COMPLETED"
        rows += sorted(merged.values(), key=lambda r: int(r[1]))
    return headers, rows


def trials(items: Iterable[Trial]) -> Table:
    """``determined.cli.experiment.list_trials``."""
    headers = ["Trial ID", "State", "H-Params", "Started", "Ended", "# of Batches"]
    rows = [
        [
            t.id,
            str(t.state),
            json.dumps(t.hparams, indent=4),
            format_time(t.created_at),
            format_time(t.ended_at),
            t.total_batches,
        ]
        for t in items
    ]
    return headers, rows


def checkpoints(items: Iterable[Checkpoint], searcher_metric: str | None) -> Table:
    """``determined.cli.checkpoint.list_checkpoints`` (``det e lc``)."""
    headers = [
        "Trial ID",
        "# of Batches",
        "State",
        "Validation Metric",
        "UUID",
        "Resources",
        "Size",
    ]
    rows = []
    for c in items:
        metrics = c.validation_metrics or {}
        metric = str(metrics[searcher_metric]) if searcher_metric in metrics else ""
        rows.append(
            [
                c.trial_id,
                c.total_batches,
                str(c.state),
                metric,
                c.uuid,
                "\n".join(sorted(c.resources)),
                sizeof_fmt(float(sum(c.resources.values()))),
            ]
        )
    return headers, rows


def summary_metrics(rows: Iterable[MetricRow]) -> dict[str, Any]:
    """A trial's ``summaryMetrics`` as det's master sums them up: per kind (``avg_metrics``,
    ``validation_metrics``), per metric its count, last, max, min and sum (numbers)."""
    summary: dict[str, dict[str, dict[str, Any]]] = {}
    for row in sorted(rows, key=lambda r: r.total_batches):
        group = summary.setdefault(
            "validation_metrics" if row.kind == "validation" else "avg_metrics", {}
        )
        for name, value in row.metrics.items():
            if not isinstance(value, int | float) or isinstance(value, bool):
                continue
            entry = group.setdefault(
                name, {"count": 0, "last": None, "max": value, "min": value, "sum": 0}
            )
            entry["count"] += 1
            entry["last"] = value
            entry["max"] = max(entry["max"], value)
            entry["min"] = min(entry["min"], value)
            entry["sum"] += value
            entry["type"] = "number"
    return summary


def trial_summary(t: Trial, summary_metrics: dict[str, Any]) -> Table:
    """``determined.cli.trial.describe_trial``'s first table."""
    headers = ["Experiment ID", "State", "H-Params", "Summary Metrics", "Started", "Ended"]
    row = [
        t.experiment_id,
        str(t.state),
        json.dumps(t.hparams, indent=4),
        json.dumps(summary_metrics, indent=4),
        format_time(t.created_at),
        format_time(t.ended_at),
    ]
    return headers, [row]


def trial_workloads(
    metric_rows: Sequence[MetricRow], checkpoints: Sequence[Checkpoint], *, metrics: bool
) -> Table:
    """``determined.cli.trial._workloads_tabulate`` ("Workloads:"; ``--metrics`` adds the
    training metrics): one row per report, training, validation or checkpoint, by batches."""
    headers = [
        "# of Batches",
        "Report Time",
        "Checkpoint",
        "Checkpoint UUID",
        "Checkpoint Metadata",
        "Validation Metrics",
    ]
    if metrics:
        headers.append("Workload Metrics")
    entries: list[tuple[int, int, list[Any]]] = []
    for m in metric_rows:
        validation = m.kind == "validation"
        if not validation and not metrics:
            continue
        body = {"avgMetrics": m.metrics}
        row: list[Any] = [
            m.total_batches,
            format_time(m.reported_at),
            None,
            None,
            None,
            json.dumps(body, indent=4) if validation else None,
        ]
        if metrics:
            row.append(None if validation else json.dumps(body, indent=4))
        entries.append((m.total_batches, 0 if not validation else 1, row))
    for c in checkpoints:
        row = [
            c.total_batches,
            format_time(c.created_at),
            str(c.state),
            c.uuid if str(c.state) in ("COMPLETED", "DELETED", "PARTIALLY_DELETED") else None,
            json.dumps(c.metadata, indent=4),
            None,
        ]
        if metrics:
            row.append(None)
        entries.append((c.total_batches, 2, row))
    return headers, [row for _, _, row in sorted(entries, key=lambda e: (e[0], e[1]))]


def users(items: Iterable[User]) -> Table:
    """``determined.cli.user.list_users`` (``render.render_objects`` of ``FullUser``: headers
    from the field names, title-cased; a missing value ``N/A``)."""
    fields = [
        "user_id",
        "username",
        "display_name",
        "admin",
        "active",
        "remote",
        "agent_uid",
        "agent_gid",
        "agent_user",
        "agent_group",
    ]
    headers = [f.replace("_", " ").title() for f in fields]
    na = NOT_AVAILABLE
    rows = [
        [na if u.user_id is None else u.user_id, u.username, na, u.admin, u.active, False]
        + [na] * 4
        for u in items
    ]
    return headers, rows


def models(items: Iterable[Any]) -> Table:
    """``determined.cli.model.list_models``."""
    headers = ["ID", "Name", "Workspace ID", "Creation Time", "Last Updated Time", "Metadata"]
    rows = [
        [
            m.model_id,
            m.name,
            WORKSPACE_ID,
            m.creation_time,
            m.last_updated_time,
            json.dumps(m.metadata or {}, indent=2),
        ]
        for m in items
    ]
    return headers, rows


def tensorboards(items: Iterable[Any]) -> Table:
    """``determined.cli.ntsc.list_tasks`` for ``tensorboard``: ``TensorboardTableHeader``'s
    keys, a missing one ``N/A`` (``render.select_values``)."""
    headers = [
        "id",
        "username",
        "description",
        "state",
        "experimentIds",
        "trialIds",
        "exitStatus",
        "resourcePool",
        "workspaceName",
    ]
    rows = [
        [
            b.id,
            b.owner,
            f"TensorBoard ({b.id})",
            str(b.state),
            list(b.experiment_ids),
            list(b.trial_ids),
            NOT_AVAILABLE if b.exit_code is None else b.exit_code,
            RESOURCE_POOL,
            WORKSPACE,
        ]
        for b in items
    ]
    return headers, rows


def templates(items: dict[str, Any], *, details: bool) -> Table:
    """``determined.cli.template.list_template`` (``TemplateClean``; ``TemplateAll`` with
    ``--details``, whose config is YAML)."""
    headers = ["Name", "Workspace"] + (["Config"] if details else [])
    rows = [
        [name, WORKSPACE] + ([yaml.safe_dump(config, default_flow_style=False)] if details else [])
        for name, config in items.items()
    ]
    return headers, rows


def jobs(items: Iterable[dict[str, Any]]) -> Table:
    """``determined.cli.job.ls`` of det's ``v1Job`` records (a PEDL master's scheduler orders
    by priority first: the ``Priority`` column, not ``Weight``); the type and state as det's
    enums' values (``TYPE_EXPERIMENT``, ``STATE_SCHEDULED``), ``Submitted`` as det writes a
    UTC ``datetime``."""
    headers = [
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
    rows = []
    for j in items:
        summary = j.get("summary")
        ahead = summary["jobsAhead"] if summary and summary["jobsAhead"] > -1 else NOT_AVAILABLE
        kind = j["type"]
        name = f"{j['name']} ({j['entityId']})" if kind == "TYPE_EXPERIMENT" else j["name"]
        submitted = datetime.fromisoformat(j["submissionTime"].replace("Z", "+00:00"))
        rows.append(
            [
                ahead,
                j["jobId"],
                kind,
                name,
                j.get("priority"),
                submitted.astimezone(UTC),
                f"{j['allocatedSlots']}/{j['requestedSlots']}",
                summary["state"] if summary else NOT_AVAILABLE,
                j["username"],
            ]
        )
    return headers, rows
