"""``pedl trial ...``: one trial on the master."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import click
from rich.markup import escape
from rich.table import Table

from pedl.cli import _det_tables as det_tables
from pedl.cli._aliases import AliasGroup
from pedl.cli._context import (
    console,
    csv_option,
    current_client,
    det_output,
    json_option,
    print_det_table,
    print_json,
)
from pedl.cli._display import metrics_text
from pedl.cli._failures import trial_failure_lines
from pedl.cli._logs import log_options, print_logs
from pedl.cli._tables import checkpoints_table, trial_table
from pedl.cli._trial_bundle import support_bundle
from pedl.client import MetricRow, SystemSample, TrialWorker

TRIAL_ID = click.argument("trial_id", type=click.IntRange(min=1))


@click.group("trial", cls=AliasGroup)
def trial() -> None:
    """Inspect trials on the master."""


@trial.command("describe")
@TRIAL_ID
@click.option("--metrics", "show_metrics", is_flag=True, help="Also list every metric row.")
@click.option(
    "--system-metrics",
    "show_system",
    is_flag=True,
    help="Also summarize its CPU, memory, disk, network and GPU use (per worker).",
)
@json_option
@csv_option
@click.option(
    "--metrics-summary",
    "show_summary",
    is_flag=True,
    help="det's: then its metrics' summary (count, last, max, min, sum per metric) as JSON.",
)
def describe(
    trial_id: int,
    show_metrics: bool,
    show_system: bool,
    as_json: bool,
    as_csv: bool,
    show_summary: bool,
) -> None:
    """Show a trial, its worker processes, its checkpoints and (with --metrics) its
    metrics, (with --system-metrics) its system metrics."""
    t = current_client().get_trial(trial_id)
    checkpoints = t.list_checkpoints()
    if (as_csv or show_summary or det_output()) and not as_json:
        every_row = t.metrics()
        summary = det_tables.summary_metrics(every_row)
        print_det_table(det_tables.trial_summary(t, summary), as_csv)
        click.echo("\nWorkloads:")
        workloads = det_tables.trial_workloads(every_row, checkpoints, metrics=show_metrics)
        print_det_table(workloads, as_csv)
        if show_summary:
            print_json(summary)
        return
    workers = t.workers()
    rows = t.metrics() if show_metrics else []
    system = list(t.iter_system_metrics()) if show_system else []
    if as_json:
        data = {
            **t.to_dict(),
            "workers": [w.model_dump(mode="json") for w in workers],
            "checkpoints": [c.to_dict() for c in checkpoints],
        }
        if show_metrics:
            data["metrics"] = [row.model_dump(mode="json") for row in rows]
        if show_system:
            data["system_metrics"] = [sample.model_dump(mode="json") for sample in system]
        print_json(data)
        return
    out = console()
    out.print(trial_table(t))
    for line in trial_failure_lines([t]):
        out.print(f"[red]{escape(line)}[/red]")
    if t.lineage is not None:
        out.print("Lineage: " + escape(t.lineage.describe()[0]))
        for line in t.lineage.describe()[1:]:
            out.print(f"  {escape(line)}")
    if workers:
        out.print(workers_table(workers, t.id))
    out.print(checkpoints_table(checkpoints, f"Checkpoints of trial {t.id}"))
    if show_metrics:
        out.print(metrics_table(rows, t.id))
    if show_system:
        out.print(system_metrics_table(system, t.id))


def metrics_table(rows: Sequence[MetricRow], trial_id: int) -> Table:
    """Every metric row the trial reported: kind, batches, the metrics as ``name=value``."""
    table = Table(title=f"Metrics of trial {trial_id}")
    table.add_column("kind")
    table.add_column("batches", justify="right")
    table.add_column("metrics")
    for row in rows:
        table.add_row(row.kind, str(row.total_batches), escape(metrics_text(row.metrics)))
    if not rows:
        table.caption = "No metrics were reported yet."
    return table


def system_metrics_table(samples: Sequence[SystemSample], trial_id: int) -> Table:
    """Each worker's system metrics over the trial: mean, peak and latest of each value
    (bytes in MiB, rates in MiB/s)."""
    table = Table(title=f"System metrics of trial {trial_id}")
    for column, justify in (
        ("rank", "right"),
        ("metric", "left"),
        ("mean", "right"),
        ("peak", "right"),
        ("latest", "right"),
        ("samples", "right"),
    ):
        table.add_column(column, justify=justify)  # type: ignore[arg-type]
    if not samples:
        table.caption = "No system metrics were recorded for this trial."
        return table
    series: dict[tuple[int, str], list[float]] = {}
    for sample in samples:
        for name, value in sample.metrics.items():
            series.setdefault((sample.rank, name), []).append(value)
    for (rank, name), values in series.items():
        label, scale = _system_unit(name)
        table.add_row(
            str(rank),
            label,
            f"{sum(values) / len(values) / scale:,.1f}",
            f"{max(values) / scale:,.1f}",
            f"{values[-1] / scale:,.1f}",
            str(len(values)),
        )
    return table


def _system_unit(name: str) -> tuple[str, float]:
    """A system metric's name with its unit for people, and what to divide its values by."""
    if name.endswith("_bytes_per_s"):
        return f"{name.removesuffix('_bytes_per_s')} (MiB/s)", 1024.0**2
    if name.endswith("_bytes"):
        return f"{name.removesuffix('_bytes')} (MiB)", 1024.0**2
    if name.endswith("_percent"):
        return f"{name.removesuffix('_percent')} (%)", 1.0
    return name, 1.0


@trial.command("logs")
@TRIAL_ID
@log_options
def logs(trial_id: int, **options: Any) -> None:
    """Print a trial's log lines (all, or as the options select)."""
    print_logs(current_client().get_trial(trial_id), **options)


def workers_table(workers: Sequence[TrialWorker], trial_id: int) -> Table:
    """The trial's worker processes: rank, pid, state (with the exit), heartbeat age."""
    table = Table(title=f"Workers of trial {trial_id}")
    for column in ("rank", "PID", "State", "Heartbeat"):
        table.add_column(column)
    for w in workers:
        state = w.state if w.exit is None else f"{w.state} ({w.exit})"
        beat = "-" if w.heartbeat_age is None else f"{w.heartbeat_age:.1f} s ago"
        rank = f"{w.rank} (chief)" if w.rank == 0 and len(workers) > 1 else str(w.rank)
        table.add_row(rank, str(w.pid), escape(state), beat)
    return table


@trial.command("kill")
@TRIAL_ID
def kill(trial_id: int) -> None:
    """Stop a trial at once."""
    t = current_client().get_trial(trial_id)
    t.kill()
    console().print(f"Trial {t.id}: {t.state}")


trial.add_command(support_bundle)
