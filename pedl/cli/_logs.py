"""The log options ``pedl trial logs`` and ``pedl experiment logs`` share (``det``'s)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from pedl.client import LogLevel, LogLine, Trial

LEVELS = [level.value for level in LogLevel]


def log_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """``-f/--follow``, ``--head``, ``--tail``, ``--level``, ``--timestamp-before``,
    ``--timestamp-after``, ``--timestamps``, ``--rank-id`` (repeatable) and ``--interval``, as
    ``det trial logs`` has them (``--head``/``--tail``: the first/last N lines; ``--level``:
    that level and above)."""
    options = [
        click.option(
            "-f", "--follow", is_flag=True, help="Keep printing new lines until the trial ends."
        ),
        click.option(
            "--head", type=click.IntRange(min=0), default=None, help="Only the first N lines."
        ),
        click.option(
            "--tail", type=click.IntRange(min=0), default=None, help="Only the last N lines."
        ),
        click.option(
            "--level",
            type=click.Choice(LEVELS, case_sensitive=False),
            default=None,
            help="Only lines of this level or above (lines without one count as INFO).",
        ),
        click.option(
            "--timestamp-before",
            default=None,
            metavar="TIME",
            help="Only lines written before TIME (RFC 3339, e.g. 2026-11-26T12:00:00Z).",
        ),
        click.option(
            "--timestamp-after", default=None, metavar="TIME", help="Only lines after TIME."
        ),
        click.option(
            "--timestamps", "show_timestamps", is_flag=True, help="Start each line with its time."
        ),
        click.option(
            "--rank-id",
            "ranks",
            type=click.IntRange(min=0),
            multiple=True,
            help="Only the lines of this worker (rank) of a multi-worker trial (repeatable).",
        ),
        click.option(
            "--interval",
            type=click.FloatRange(min=0.01),
            default=1.0,
            show_default=True,
            help="Seconds between polls with --follow.",
        ),
    ]
    for option in reversed(options):
        command = option(command)
    return command


def print_logs(
    trial: Trial,
    *,
    follow: bool,
    head: int | None,
    tail: int | None,
    level: str | None,
    timestamp_before: str | None,
    timestamp_after: str | None,
    show_timestamps: bool,
    interval: float,
    ranks: tuple[int, ...] = (),
) -> None:
    """Print the trial's lines that pass the options (a usage error for bad combinations);
    the master filters them."""
    if follow and (head is not None or tail is not None):
        raise click.UsageError("--follow cannot be combined with --head or --tail")
    if head is not None and tail is not None:
        raise click.UsageError("--head and --tail cannot both be given")
    try:
        lines = trial.iter_log_lines(
            follow,
            head=head,
            tail=tail,
            rank_ids=sorted(set(ranks)) or None,
            min_level=level,
            timestamp_before=timestamp_before,
            timestamp_after=timestamp_after,
            interval=interval,
        )
        for line in lines:
            click.echo(format_line(line, show_timestamps))
    except ValueError as err:  # an unreadable timestamp
        raise click.UsageError(str(err)) from err


def format_line(line: LogLine, show_timestamp: bool) -> str:
    """The line's text, after its ISO timestamp when asked (``-`` when it has none)."""
    if not show_timestamp:
        return line.message
    stamp = line.timestamp.isoformat() if line.timestamp is not None else "-"
    return f"[{stamp}] {line.message}"
