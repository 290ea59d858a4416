"""``pedl trial ...``: one trial on the master."""

from __future__ import annotations

from typing import Any

import click
from rich.markup import escape

from pedl.cli._aliases import AliasGroup
from pedl.cli._context import console, current_client, json_option, print_json
from pedl.cli._display import metrics_text
from pedl.cli._failures import trial_failure_lines
from pedl.cli._logs import log_options, print_logs
from pedl.cli._tables import checkpoints_table, trial_table

TRIAL_ID = click.argument("trial_id", type=click.IntRange(min=1))


@click.group("trial", cls=AliasGroup)
def trial() -> None:
    """Inspect trials on the master."""


@trial.command("describe")
@TRIAL_ID
@click.option("--metrics", "show_metrics", is_flag=True, help="Also list every metric row.")
@json_option
def describe(trial_id: int, show_metrics: bool, as_json: bool) -> None:
    """Show a trial, its checkpoints and (with --metrics) its metrics."""
    t = current_client().get_trial(trial_id)
    checkpoints = t.list_checkpoints()
    rows = t.metrics() if show_metrics else []
    if as_json:
        data = {**t.to_dict(), "checkpoints": [c.to_dict() for c in checkpoints]}
        if show_metrics:
            data["metrics"] = [row.model_dump(mode="json") for row in rows]
        print_json(data)
        return
    out = console()
    out.print(trial_table(t))
    for line in trial_failure_lines([t]):
        out.print(f"[red]{escape(line)}[/red]")
    out.print(checkpoints_table(checkpoints, f"Checkpoints of trial {t.id}"))
    for row in rows:
        out.print(f"{row.kind:<10} {row.total_batches:>8}  {metrics_text(row.metrics)}")


@trial.command("logs")
@TRIAL_ID
@log_options
def logs(trial_id: int, **options: Any) -> None:
    """Print a trial's log lines (all, or as the options select)."""
    print_logs(current_client().get_trial(trial_id), **options)


@trial.command("kill")
@TRIAL_ID
def kill(trial_id: int) -> None:
    """Stop a trial at once."""
    t = current_client().get_trial(trial_id)
    t.kill()
    console().print(f"Trial {t.id}: {t.state}")
