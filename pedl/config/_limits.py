"""Bounds on an experiment config as a document: its size, nesting, node count and values.

A config is refused (ConfigError naming the field) when its YAML text is over
``MAX_CONFIG_BYTES``; when it nests deeper than ``MAX_CONFIG_DEPTH`` mappings and lists;
when it has more than ``MAX_CONFIG_NODES`` values counted with every YAML alias expanded (a
"billion laughs" is refused while it is composed, before anything is built; see
:mod:`._yaml`); and when a value is one that no database stores as given: a string with a
NUL character or a lone UTF-16 surrogate, a NaN or infinite number, an integer outside
64 bits. The numeric fields PEDL acts on have their own bounds (``MAX_LENGTH``,
``MAX_TRIALS``, ``MAX_SLOTS``, ``MAX_RESTARTS``; ``MAX_GRID_POINTS`` and
``MAX_GLOBAL_BATCH_SIZE`` in :mod:`._runnable`), and so do the texts the master stores in
columns of their own, the same on SQLite as on PostgreSQL (``MAX_NAME``, ``MAX_DESCRIPTION``,
``MAX_LABELS``, ``MAX_LABEL``, ``MAX_METRIC_NAME``).

The bounds that are a matter of policy can be changed: ``PEDL_MAX_CONFIG_BYTES``,
``PEDL_MAX_CONFIG_DEPTH``, ``PEDL_MAX_CONFIG_NODES``, ``PEDL_MAX_TRIALS``, ``PEDL_MAX_SLOTS``,
``PEDL_MAX_RESTARTS``, ``PEDL_MAX_GRID_POINTS`` and ``PEDL_MAX_GLOBAL_BATCH_SIZE`` in the
environment of every PEDL process that reads configs (the master passes them on to its trials,
and local mode reads the CLI's), read once when :mod:`pedl.config` is imported. The text
bounds follow the databases' columns and ``MAX_LENGTH`` the exactness of a float: those are
fixed.
"""

from __future__ import annotations

import math
import os
import sys
from collections.abc import Mapping
from typing import Any

from pedl._setting_error import SettingError
from pedl.config._issues import PathElement, Problem


def limit_setting(name: str, default: int, *, ceiling: int | None = None) -> int:
    """``default``, or the whole number in the environment variable ``PEDL_<name>`` (from 1 to
    ``ceiling``); a value that is not one raises :class:`~pedl._setting_error.SettingError` (a
    ``ValueError``) naming the variable."""
    variable = f"PEDL_{name}"
    raw = os.environ.get(variable, "").strip()
    if not raw:
        return default
    try:
        value = int(raw.replace("_", ""))
    except ValueError:
        value = 0
    if value < 1 or (ceiling is not None and value > ceiling):
        bounds = f"from 1 to {ceiling:,}" if ceiling is not None else "of 1 or more"
        raise SettingError(f"{variable} must be a whole number {bounds}, got {raw!r}")
    return value


MAX_CONFIG_BYTES = limit_setting("MAX_CONFIG_BYTES", 1024 * 1024)
"""The largest experiment config, in bytes of YAML (or JSON) text."""

MAX_CONFIG_DEPTH = limit_setting("MAX_CONFIG_DEPTH", 32, ceiling=200)
"""The deepest nesting of mappings and lists in a config (the top mapping is depth 1); at
most 200, well inside Python's recursion limit."""

MAX_CONFIG_NODES = limit_setting("MAX_CONFIG_NODES", 100_000)
"""The most values (mappings, lists, scalars, keys included) in a config, aliases expanded."""

MAX_LENGTH = 2**53
"""The largest training length, period or ``records_per_epoch`` (exact as a float)."""

MAX_TRIALS = limit_setting("MAX_TRIALS", 100_000)
"""The most trials a searcher may be asked to run, or to run at once."""

MAX_SLOTS = limit_setting("MAX_SLOTS", 1024)
"""The most slots one trial may ask for."""

MAX_RESTARTS = limit_setting("MAX_RESTARTS", 10_000)
"""The largest ``max_restarts``."""

MAX_NAME = 512
"""The longest experiment ``name`` (the databases' column)."""

MAX_DESCRIPTION = 10_000
"""The longest experiment ``description``."""

MAX_LABELS = 100
"""The most ``labels`` of an experiment."""

MAX_LABEL = 255
"""The longest label."""

MAX_METRIC_NAME = 256
"""The longest ``searcher.metric`` (a metric name, as trials report them)."""

_MIN_INT = -(2**63)
_MAX_INT = 2**63 - 1


class LongInteger(int):
    """Stands for an integer literal with more digits than Python converts from text
    (``sys.get_int_max_str_digits()``, 4,300 by default), which no field can hold: its value
    is out of every field's range (``±2**64``), and it keeps how many digits the literal had,
    so that :func:`value_problems` refuses it naming its field, as it does a shorter integer
    out of range. Made by :func:`parse_integer`, never converted from the text."""

    digits: int

    def __new__(cls, negative: bool, digits: int) -> LongInteger:
        value = super().__new__(cls, -(2**64) if negative else 2**64)
        value.digits = digits
        return value

    def __reduce__(self) -> tuple[type[LongInteger], tuple[bool, int]]:
        return (LongInteger, (self < 0, self.digits))  # copied and pickled as itself


def parse_integer(text: str) -> int:
    """``int(text)``, or a :class:`LongInteger` for a literal with more digits than Python
    converts (where ``int`` raises ``ValueError``): what the JSON and YAML parsers of configs
    read integers with (``json.loads(..., parse_int=parse_integer)``)."""
    try:
        return int(text)
    except ValueError:
        digits = sum(char.isdigit() for char in text)
        if digits <= sys.get_int_max_str_digits():
            raise
        return LongInteger(text.lstrip().startswith("-"), digits)


def _integer_text(value: int) -> str:
    """An integer out of 64 bits as a message names it: ``integer 1.18e+21``, or by its
    number of digits when no float holds it (formatting it as one would overflow)."""
    if not isinstance(value, LongInteger):
        try:
            return f"integer {value:.3g}"
        except OverflowError:
            pass
    digits = value.digits if isinstance(value, LongInteger) else _digits(value)
    return f"{'a negative' if value < 0 else 'an'} integer of {digits:,} digits"


def _digits(value: int) -> int:
    """How many decimal digits ``value`` has, without converting it to text (which Python
    refuses past ``sys.get_int_max_str_digits()`` digits)."""
    magnitude = abs(value)
    digits = max(1, int(magnitude.bit_length() * math.log10(2)))
    while digits > 1 and 10 ** (digits - 1) > magnitude:
        digits -= 1
    while 10**digits <= magnitude:
        digits += 1
    return digits


def _surrogate(text: str) -> bool:
    return any("\ud800" <= char <= "\udfff" for char in text)


def text_problem(text: str) -> str | None:
    """Why ``text`` cannot be stored as a string (a NUL, a lone surrogate), or ``None``."""
    if "\x00" in text:
        return "NUL characters are not allowed"
    if not text.isascii() and _surrogate(text):
        return "a lone UTF-16 surrogate (\\ud800-\\udfff) is not text"
    return None


def _scalar_problem(value: Any) -> str | None:
    if isinstance(value, str):
        return text_problem(value)
    if isinstance(value, bool):
        return None
    if isinstance(value, int) and not _MIN_INT <= value <= _MAX_INT:
        return f"{_integer_text(value)} is out of range (a 64-bit integer, at most 2**63-1)"
    if isinstance(value, float) and not math.isfinite(value):
        return f"{value} is not allowed: numbers must be finite"
    return None


def _element(key: Any) -> PathElement:
    """``key`` as a path element that is safe to show: escaped unless it is text."""
    if isinstance(key, int) and not isinstance(key, bool):
        return key
    text = str(key)
    if text_problem(text) is None:
        return text
    return text.encode("unicode_escape").decode("ascii")  # a NUL as \x00, a surrogate \udcff


def shape_problem(data: Any) -> Problem | None:
    """The first bound of depth or node count that ``data`` (a parsed config, which may share
    subtrees, as aliases do) passes, or ``None``. Iterative: any depth is safe to check."""
    count = 0
    stack: list[tuple[Any, tuple[PathElement, ...]]] = [(data, ())]
    while stack:
        value, path = stack.pop()
        count += 1
        if count > MAX_CONFIG_NODES:
            return (
                (),
                f"the config has more than {MAX_CONFIG_NODES:,} values (YAML aliases counted "
                "expanded); it is too large to be an experiment config",
            )
        if isinstance(value, Mapping | list):
            if len(path) >= MAX_CONFIG_DEPTH:
                return (path, f"nested deeper than {MAX_CONFIG_DEPTH} levels of mappings and lists")
            if isinstance(value, Mapping):
                count += len(value)  # the keys
                stack.extend((item, (*path, _element(key))) for key, item in value.items())
            else:
                stack.extend((item, (*path, index)) for index, item in enumerate(value))
    return None


def value_problems(data: Any) -> list[Problem]:
    """Keys and values that no database stores as given (see the module's docstring), each
    with its path. ``data`` must have passed :func:`shape_problem`."""
    problems: list[Problem] = []
    stack: list[tuple[Any, tuple[PathElement, ...]]] = [(data, ())]
    while stack:
        value, path = stack.pop()
        if isinstance(value, Mapping):
            for key, item in value.items():
                problem = _scalar_problem(key)
                if problem is not None:
                    problems.append(((*path, _element(key)), f"key: {problem}"))
                else:
                    stack.append((item, (*path, _element(key))))
        elif isinstance(value, list):
            stack.extend((item, (*path, index)) for index, item in enumerate(value))
        else:
            problem = _scalar_problem(value)
            if problem is not None:
                problems.append((path, problem))
    return sorted(problems, key=lambda problem: [str(part) for part in problem[0]])
