"""``pedl trial ...``: one trial on the master."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import click
from rich.markup import escape
from rich.table import Table

from pedl.cli._aliases import AliasGroup
from pedl.cli._context import console, current_client, json_option, print_json
from pedl.cli._display import metrics_text
from pedl.cli._failures import trial_failure_lines
from pedl.cli._logs import log_options, print_logs
from pedl.cli._tables import checkpoints_table, trial_table
from pedl.client import TrialWorker

TRIAL_ID = click.argument("trial_id", type=click.IntRange(min=1))


@click.group("trial", cls=AliasGroup)
def trial() -> None:
    """Inspect trials on the master."""


@trial.command("describe")
@TRIAL_ID
@click.option("--metrics", "show_metrics", is_flag=True, help="Also list every metric row.")
@json_option
def describe(trial_id: int, show_metrics: bool, as_json: bool) -> None:
    """Show a trial, its worker processes, its checkpoints and (with --metrics) its
    metrics."""
    t = current_client().get_trial(trial_id)
    checkpoints = t.list_checkpoints()
    workers = t.workers()
    rows = t.metrics() if show_metrics else []
    if as_json:
        data = {
            **t.to_dict(),
            "workers": [w.model_dump(mode="json") for w in workers],
            "checkpoints": [c.to_dict() for c in checkpoints],
        }
        if show_metrics:
            data["metrics"] = [row.model_dump(mode="json") for row in rows]
        print_json(data)
        return
    out = console()
    out.print(trial_table(t))
    for line in trial_failure_lines([t]):
        out.print(f"[red]{escape(line)}[/red]")
    if workers:
        out.print(workers_table(workers, t.id))
    out.print(checkpoints_table(checkpoints, f"Checkpoints of trial {t.id}"))
    for row in rows:
        out.print(f"{row.kind:<10} {row.total_batches:>8}  {metrics_text(row.metrics)}")


@trial.command("logs")
@TRIAL_ID
@log_options
@click.option(
    "--rank",
    "only_rank",
    type=click.IntRange(min=0),
    default=None,
    help="Only the lines of this worker (rank; 0: the chief) of a multi-worker trial.",
)
def logs(trial_id: int, only_rank: int | None, **options: Any) -> None:
    """Print a trial's log lines (all, or as the options select)."""
    if only_rank is not None:
        if options.get("rank") not in (None, only_rank):
            raise click.UsageError("--rank and --rank-id name different workers")
        options["rank"] = only_rank
    print_logs(current_client().get_trial(trial_id), **options)


def workers_table(workers: Sequence[TrialWorker], trial_id: int) -> Table:
    """The trial's worker processes: rank, pid, state (with the exit), heartbeat age."""
    table = Table(title=f"Workers of trial {trial_id}")
    for column in ("Rank", "PID", "State", "Heartbeat"):
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
