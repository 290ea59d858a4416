"""The log options ``pedl trial logs`` and ``pedl experiment logs`` share (``det``'s)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from pedl.client import LogLevel, LogLine, Trial

LEVELS = [level.value for level in LogLevel]


def log_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """``-f/--follow``, ``--head``, ``--tail``, ``--level``, ``--timestamp-before``,
    ``--timestamp-after``, ``--timestamps``, ``--rank`` (repeatable; det's ``--rank-id`` too,
    hidden from ``--help``) and ``--interval``, as ``det trial logs`` has them
    (``--head``/``--tail``: the first/last N lines; ``--level``: that level and above)."""
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
            "--rank",
            "ranks",
            type=click.IntRange(min=0),
            multiple=True,
            help="Only the lines of this worker (rank; 0: the chief) of a multi-worker trial "
            "(repeatable).",
        ),
        click.option(  # det's spelling, kept working and out of --help
            "--rank-id", "det_ranks", type=click.IntRange(min=0), multiple=True, hidden=True
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
    det_ranks: tuple[int, ...] = (),
) -> None:
    """Print the trial's lines that pass the options (a usage error for bad combinations);
    the master filters them. When none pass, standard error says so and why it may be (a
    rank asked of a trial whose lines carry none); the exit status stays 0."""
    if follow and (head is not None or tail is not None):
        raise click.UsageError("--follow cannot be combined with --head or --tail")
    if head is not None and tail is not None:
        raise click.UsageError("--head and --tail cannot both be given")
    wanted_ranks = sorted({*ranks, *det_ranks})
    printed = 0
    try:
        lines = trial.iter_log_lines(
            follow,
            head=head,
            tail=tail,
            rank_ids=wanted_ranks or None,
            min_level=level,
            timestamp_before=timestamp_before,
            timestamp_after=timestamp_after,
            interval=interval,
        )
        for line in lines:
            click.echo(format_line(line, show_timestamps))
            printed += 1
    except ValueError as err:  # an unreadable timestamp
        raise click.UsageError(str(err)) from err
    if printed == 0 and head != 0 and tail != 0:
        click.echo(
            _no_match(trial, wanted_ranks, level, timestamp_before, timestamp_after), err=True
        )


def _no_match(
    trial: Trial,
    ranks: list[int],
    level: str | None,
    timestamp_before: str | None,
    timestamp_after: str | None,
) -> str:
    """Why no line was printed: the filters given, and whether the trial wrote any line."""
    filters = [f"--rank {rank}" for rank in ranks]
    filters += [f"--level {level.upper()}"] if level else []
    filters += [f"--timestamp-before {timestamp_before}"] if timestamp_before else []
    filters += [f"--timestamp-after {timestamp_after}"] if timestamp_after else []
    if not filters:
        return f"0 lines: trial {trial.id} has written no log lines yet"
    message = f"0 lines match {' '.join(filters)} in trial {trial.id}'s log"
    if ranks:
        sample = list(trial.iter_log_lines(False, tail=1000))
        if sample and all(line.rank is None for line in sample):
            message += " (its lines carry no rank: it ran one worker process; leave out --rank)"
    return message


def format_line(line: LogLine, show_timestamp: bool) -> str:
    """The line's text, after its ISO timestamp when asked (``-`` when it has none)."""
    if not show_timestamp:
        return line.message
    stamp = line.timestamp.isoformat() if line.timestamp is not None else "-"
    return f"[{stamp}] {line.message}"
