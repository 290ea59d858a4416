"""Problems found in an experiment config, and the error that carries all of them."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

PathElement = str | int
"""One step of a config path: a mapping key or a list index."""


def format_path(path: Sequence[PathElement]) -> str:
    """Render a path as users write it: ``a.b[2].c``; list indices in brackets.

    The empty path (the config as a whole) renders as ``""``.
    """
    out = ""
    for element in path:
        if isinstance(element, int):
            out += f"[{element}]"
        else:
            out = f"{out}.{element}" if out else str(element)
    return out


def describe_value(value: Any) -> str:
    """How a config value is named in messages: strings quoted, YAML spellings of scalars."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return f"'{value}'"
    if isinstance(value, Mapping):
        return "a mapping"
    if isinstance(value, list | tuple):
        return "a list"
    return str(value)


@dataclass(frozen=True)
class ConfigIssue:
    """One problem in an experiment config.

    ``path`` is the dotted field path (list indices in brackets, e.g.
    ``environment.environment_variables[2]``; ``""`` for the config as a whole),
    ``message`` says in plain words what is wrong or what was expected, and ``line`` is
    the 1-based YAML line of the offending key or item when known (``None`` for configs
    given as mappings and for values set by overrides).
    """

    path: str
    message: str
    line: int | None = None

    def __str__(self) -> str:
        parts = []
        if self.line is not None:
            parts.append(f"line {self.line}")
        if self.path:
            parts.append(self.path)
        parts.append(self.message)
        return ": ".join(parts)


def _sort_key(issue: ConfigIssue) -> tuple[int, int, str, str]:
    return (
        0 if issue.line is not None else 1,
        issue.line or 0,
        issue.path,
        issue.message,
    )


class ConfigError(ValueError):
    """An experiment config is invalid; ``issues`` lists every problem found, not just the first.

    ``source`` names where the config came from (a file name, or ``"<config>"``).
    ``str(err)`` is one header line (``"3 problems in const.yaml:"``) followed by one
    indented line per issue, sorted by line number (issues without a line last).
    """

    def __init__(self, issues: Iterable[ConfigIssue], source: str = "<config>") -> None:
        unique = list(dict.fromkeys(issues))
        if not unique:
            raise ValueError("ConfigError needs at least one issue")
        self.issues: list[ConfigIssue] = sorted(unique, key=_sort_key)
        self.source = source
        super().__init__(self._render())

    def _render(self) -> str:
        count = len(self.issues)
        noun = "problem" if count == 1 else "problems"
        lines = [f"{count} {noun} in {self.source}:"]
        lines.extend(f"  {issue}" for issue in self.issues)
        return "\n".join(lines)

    def __str__(self) -> str:
        return self._render()


class ConfigWarning(UserWarning):
    """A config was accepted, but something in it deserves the user's attention (e.g. it sets
    Determined fields that PEDL ignores); the SDK issues these with ``warnings.warn``."""


Problem = tuple[tuple[PathElement, ...], str]
"""A problem before it becomes a ConfigIssue: the path as a tuple, and the message."""
