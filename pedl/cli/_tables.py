"""Rich tables of experiments, trials and checkpoints from the master."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from rich.table import Table

from pedl.cli._display import format_number, format_size, hparams_text, metrics_text
from pedl.client import Checkpoint, Experiment, Trial
from pedl.vocabulary import state_with_outcome

UUID_WIDTH = 36


def _when(value: datetime | None) -> str:
    return "-" if value is None else value.strftime("%Y-%m-%d %H:%M:%S")


def _uuid_column(table: Table, header: str) -> None:
    """A column of checkpoint UUIDs, never wrapped or cut however narrow the terminal."""
    table.add_column(header, no_wrap=True, min_width=UUID_WIDTH)


def experiments_table(experiments: Sequence[Experiment], *, show_project: bool = False) -> Table:
    """The experiments; ``show_project``: their workspaces and projects first."""
    table = Table(title="Experiments")
    columns: tuple[str, ...] = (
        "id",
        "name",
        "state",
        "progress",
        "searcher metric",
        "best",
        "owner",
        "created",
    )
    if show_project:
        columns = ("workspace", "project", *columns)
    for column in columns:
        numeric = column in ("id", "progress", "best")
        table.add_column(column, justify="right" if numeric else "left")
    for e in experiments:
        metric = "-" if e.searcher_metric is None else e.searcher_metric
        direction = "min" if e.smaller_is_better else "max"
        record = e.to_dict()
        where = [str(record.get(k, "")) for k in ("workspace_name", "project_name")]
        table.add_row(
            *(where if show_project else []),
            str(e.id),
            e.name or "-",
            e.state,
            f"{e.progress:.0%}",
            f"{metric} ({direction})",
            format_number(e.best_validation),
            e.owner,
            _when(e.created_at),
        )
    return table


def experiment_table(e: Experiment) -> Table:
    table = Table(title=f"Experiment {e.id}", show_header=False)
    table.add_column("field", style="bold")
    table.add_column("value")
    searcher = e.config.get("searcher", {})
    rows = {
        "name": e.name or "-",
        "state": e.state,
        "progress": f"{e.progress:.0%}",
        "owner": e.owner,
        "searcher": str(searcher.get("name", "-")),
        "metric": f"{e.searcher_metric} ({'smaller' if e.smaller_is_better else 'larger'} "
        "is better)",
        "best validation": format_number(e.best_validation),
        "created": _when(e.created_at),
        "ended": _when(e.ended_at),
    }
    for key, value in rows.items():
        table.add_row(key, value)
    return table


def trials_table(trials: Sequence[Trial], metric: str | None = None) -> Table:
    table = Table(title="Trials")
    table.add_column("id", justify="right")
    table.add_column("state")
    table.add_column("hyperparameters")
    table.add_column("batches", justify="right")
    table.add_column(f"best {metric}" if metric else "best validation", justify="right")
    _uuid_column(table, "best checkpoint")
    table.add_column("restarts", justify="right")
    for t in trials:
        table.add_row(
            str(t.id),
            state_with_outcome(t.state, t.outcome, t.total_batches),
            hparams_text(t.hparams),
            str(t.total_batches),
            format_number(t.best_validation),
            t.best_checkpoint_uuid or "-",
            str(t.restarts),
        )
    return table


def trial_table(t: Trial) -> Table:
    table = Table(title=f"Trial {t.id}", show_header=False)
    table.add_column("field", style="bold")
    table.add_column("value", min_width=UUID_WIDTH)  # the checkpoint UUIDs stay whole
    rows = {
        "experiment": str(t.experiment_id),
        "state": state_with_outcome(t.state, t.outcome, t.total_batches),
        "hyperparameters": hparams_text(t.hparams),
        "seed": str(t.seed),
        "batches": str(t.total_batches),
        "restarts": str(t.restarts),
        "best validation": format_number(t.best_validation),
        "best checkpoint": t.best_checkpoint_uuid or "-",
        "latest checkpoint": t.latest_checkpoint_uuid or "-",
        "created": _when(t.created_at),
        "ended": _when(t.ended_at),
    }
    for key, value in rows.items():
        table.add_row(key, value)
    return table


def checkpoints_table(checkpoints: Sequence[Checkpoint], title: str = "Checkpoints") -> Table:
    table = Table(title=title)
    _uuid_column(table, "uuid")
    table.add_column("trial", justify="right")
    table.add_column("batches", justify="right")
    table.add_column("state")
    table.add_column("size", justify="right")
    table.add_column("validation metrics")
    for c in checkpoints:
        table.add_row(
            c.uuid,
            str(c.trial_id),
            str(c.total_batches),
            c.state,
            format_size(c.size),
            metrics_text(c.validation_metrics),
        )
    return table


def checkpoint_table(c: Checkpoint) -> Table:
    """One checkpoint's fields (its metadata apart: :func:`pedl.cli._display.print_metadata`)."""
    table = Table(title=f"Checkpoint {c.uuid}", show_header=False)
    table.add_column("field", style="bold")
    table.add_column("value")
    rows = {
        "experiment": str(c.experiment_id),
        "trial": str(c.trial_id),
        "batches": str(c.total_batches),
        "state": c.state,
        "size": f"{format_size(c.size)} in {len(c.resources)} files",
        "validation metrics": metrics_text(c.validation_metrics),
        "created": _when(c.created_at),
    }
    for key, value in rows.items():
        table.add_row(key, value)
    return table
