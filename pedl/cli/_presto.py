"""Tables as Determined's ``det`` prints them: tabulate's "presto" format, or CSV.

``det`` 0.38.1 prints every list and describe through ``determined.cli.render.tabulate_or_csv``:
``tabulate.tabulate(values, headers, tablefmt="presto")``, or ``csv.writer`` rows with
``--csv``. Scripts written for ``det`` parse that text with ``awk``/``cut``, so this module
reproduces tabulate's rules for it (no dependency on tabulate): ``None`` is an empty cell; a
column whose every value reads as an int (or a float) is numeric, right-aligned (floats on
their decimal points, written with ``format(value, "g")``); other columns are left-aligned;
a column is at least as wide as its header plus two; a cell may span several lines.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Sequence
from typing import Any

MIN_PADDING = 2
"""tabulate's ``MIN_PADDING``: a column is at least its header's width plus this."""

_NONE, _BOOL, _INT, _FLOAT, _STR = range(5)
"""tabulate's column types from the least generic to the most (``_more_generic``)."""


def _is_int(value: Any) -> bool:
    if type(value) is int:
        return True
    if isinstance(value, str):
        try:
            int(value)
        except ValueError:
            return False
        return True
    return False


def _is_number(value: Any) -> bool:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return True
    if isinstance(value, str):
        try:
            number = float(value)
        except ValueError:
            return False
        # "1e23456" reads as inf but is no number to tabulate; "inf" and "nan" are.
        return number - number == 0 or value.lower() in ("inf", "-inf", "+inf", "nan", "infinity")
    return False


def _kind(value: Any) -> int:
    if value is None or value == "":
        return _NONE
    if type(value) is bool or value in ("True", "False"):
        return _BOOL
    if _is_int(value):
        return _INT
    if _is_number(value):
        return _FLOAT
    return _STR


def _text(value: Any, kind: int) -> str:
    if value is None:
        return ""
    if isinstance(value, str) and not value:
        return ""
    if type(value) is bool:
        return str(value)
    try:
        if kind == _INT:
            return format(int(value), "")
        if kind == _FLOAT:
            return format(float(value), "g")
    except ValueError:  # "True" in a numeric column: as written
        pass
    return f"{value}"


def _after_point(text: str) -> int:
    """tabulate's ``_afterpoint``: digits after the decimal point (or exponent), -1 for none."""
    if not _is_number(text) or _is_int(text):
        return -1
    pos = text.rfind(".")
    pos = text.lower().rfind("e") if pos < 0 else pos
    return len(text) - pos - 1 if pos >= 0 else -1


def _width(cell: str) -> int:
    return max((len(line) for line in cell.splitlines()), default=0)


def _pad(cell: str, width: int, right: bool) -> str:
    lines = cell.splitlines()
    return "\n".join(line.rjust(width) if right else line.ljust(width) for line in lines)


def presto(headers: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    """``tabulate.tabulate(rows, headers, tablefmt="presto")`` for plain ASCII cells: the
    header line, the dashes line (``-----+-----``), then one line (or several, for a cell with
    line breaks) per row."""
    return _table(headers, rows, grid=False)


def grid(headers: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    """``tabulate.tabulate(rows, headers, tablefmt="grid")`` (det's ``template list -d``): the
    columns as :func:`presto` lays them out, framed by ``|`` and ``+---+`` lines, ``+===+``
    under the header."""
    return _table(headers, rows, grid=True)


def _table(headers: Sequence[str], rows: Iterable[Sequence[Any]], *, grid: bool) -> str:
    table = [list(row) for row in rows]
    columns = [[row[i] for row in table] for i in range(len(headers))]
    padded: list[list[str]] = []
    numeric: list[bool] = []
    widths: list[int] = []
    for header, values in zip(headers, columns, strict=True):
        kind = max((_kind(v) for v in values), default=_BOOL)
        kind = max(kind, _BOOL)
        cells = [_text(v, kind) for v in values]
        is_number = kind in (_INT, _FLOAT)
        if is_number:
            decimals = [_after_point(c) for c in cells]
            most = max(decimals, default=-1)
            cells = [c + (most - d) * " " for c, d in zip(cells, decimals, strict=True)]
        else:
            cells = [c.strip() for c in cells]
        width = max([len(header) + MIN_PADDING, *(_width(c) for c in cells)])
        padded.append([_pad(c, width, is_number) for c in cells])
        numeric.append(is_number)
        widths.append(width)
    header_cells = [
        h.rjust(w) if right else h.ljust(w)
        for h, w, right in zip(headers, widths, numeric, strict=True)
    ]
    edge, corner = ("|", "+") if grid else ("", "")

    def rule(fill: str) -> str:
        return corner + "+".join(fill * (w + 2) for w in widths) + corner

    def line(cells: Sequence[str]) -> str:
        # tabulate strips each line's end (presto: the last column's padding).
        return (edge + "|".join(f" {cell} " for cell in cells) + edge).rstrip()

    lines = [rule("-")] if grid else []
    lines.append(line(header_cells))
    lines.append(rule("=" if grid else "-"))
    multiline = any("\n" in str(v) or "\r" in str(v) for row in table for v in row)
    for r in range(len(table)):
        if grid and r:
            lines.append(rule("-"))
        cells_lines = [padded[c][r].splitlines() for c in range(len(headers))]
        # tabulate's multi-line mode (a cell with a line break) gives an all-empty row no line.
        height = max((len(cl) for cl in cells_lines), default=0) if multiline else 1
        for i in range(height):
            parts = [cl[i] if i < len(cl) else " " * widths[c] for c, cl in enumerate(cells_lines)]
            lines.append(line(parts))
    if grid:
        lines.append(rule("-"))
    return "\n".join(lines)


def csv_text(headers: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    """``csv.writer``'s text of the header row and the rows (``\\r\\n`` line ends, as det's)."""
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(headers)
    writer.writerows(rows)
    return out.getvalue()


def tabulate_or_csv(headers: Sequence[str], rows: Iterable[Sequence[Any]], as_csv: bool) -> str:
    """det's ``render.tabulate_or_csv``: the table's text, CSV with ``as_csv``."""
    if as_csv:
        return csv_text(headers, rows)
    return presto(headers, rows) + "\n"
