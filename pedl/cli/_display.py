"""Numbers, hyperparameters and metrics as the CLI's tables and progress lines show them."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console

SIGNIFICANT_DIGITS = 4
NUMBER_WIDTH = 11
"""The longest :func:`format_number` of a float: ``-1.235e+308``."""


def format_number(value: Any) -> str:
    """A hyperparameter or metric value for a table: floats with 4 significant digits
    (``0.0001234``, ``0.1235``, ``1e-05``, ``1.235e+05``), ints and bools as themselves,
    ``None`` as ``-``, anything else as its JSON (strings bare)."""
    if value is None:
        return "-"
    if isinstance(value, bool | int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            return str(value)
        return f"{value:.{SIGNIFICANT_DIGITS}g}"
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, sort_keys=True, default=str)
    except (TypeError, ValueError):
        return str(value)


def format_size(size: int) -> str:
    """Bytes in binary units, as the web UI shows them too: ``512 B``, ``1.5 KiB``,
    ``12.3 MiB``, ``1.2 GiB`` (GiB the largest)."""
    amount = float(size)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if amount < 1024 or unit == "GiB":
            return f"{amount:.0f} {unit}" if unit == "B" else f"{amount:.1f} {unit}"
        amount /= 1024
    return f"{size} B"


def hparams_text(hparams: Mapping[str, Any]) -> str:
    """Hyperparameters as ``name=value`` pairs, nested groups dotted, values by
    :func:`format_number`, sorted by name."""
    from pedl.config import flatten_hparams  # the config's models: only where trials show

    flat = flatten_hparams(hparams)
    return " ".join(f"{k}={format_number(flat[k])}" for k in sorted(flat)) or "-"


def metrics_text(metrics: Mapping[str, Any] | None) -> str:
    """Metrics as ``name=value`` pairs sorted by name, values by :func:`format_number`."""
    if not metrics:
        return "-"
    return " ".join(f"{k}={format_number(v)}" for k, v in sorted(metrics.items()))


METADATA_VALUE_WIDTH = 80
"""The most characters of one metadata value a describe prints (``--json``: all of it)."""


def metadata_lines(
    metadata: Mapping[str, Any], *, indent: int = 2, width: int = METADATA_VALUE_WIDTH
) -> list[str]:
    """A checkpoint's or model's metadata as ``key: value`` lines, keys sorted, an object's
    keys indented under it, each value by :func:`format_number` (lists and the like as JSON)
    cut to ``width`` characters with how long it was (``... (3,012 characters)``)."""
    lines: list[str] = []

    def walk(mapping: Mapping[str, Any], depth: int) -> None:
        pad = " " * (indent * depth)
        for key in sorted(mapping, key=str):
            value = mapping[key]
            if isinstance(value, Mapping) and value:
                lines.append(f"{pad}{key}:")
                walk(value, depth + 1)
                continue
            text = " ".join(format_number(value).split())  # one line, whatever it holds
            if len(text) > width:
                text = f"{text[:width]}... ({len(text):,} characters)"
            lines.append(f"{pad}{key}: {text}")

    walk(metadata, 1)
    return lines


def print_metadata(console: Console, metadata: Mapping[str, Any]) -> None:
    """``metadata:`` and :func:`metadata_lines` (``metadata: -`` when there is none)."""
    if not metadata:
        console.print("metadata: -", markup=False, highlight=False)
        return
    console.print("metadata:", markup=False, highlight=False)
    for line in metadata_lines(metadata):
        console.print(line, markup=False, highlight=False, soft_wrap=True)


def print_warnings(console: Console, messages: list[str]) -> None:
    """A config's warnings, one yellow line each."""
    for message in messages:
        console.print(f"warning: {message}", style="yellow", markup=False, highlight=False)
