"""Command-line style overrides: ``dotted.key=yaml_value`` applied to a raw config."""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

import yaml

from pedl.config._issues import ConfigError, ConfigIssue, PathElement, Problem, format_path
from pedl.config._yaml import load_value, load_yaml

Overridden = dict[tuple[PathElement, ...], str]
"""Path set by an override -> the override's text."""


def apply_overrides(
    data: dict[Any, Any], overrides: Sequence[str]
) -> tuple[list[Problem], Overridden]:
    """Apply ``overrides`` to ``data`` in place, in order; return problems and what was set.

    ``"searcher.max_trials=4"`` sets ``data["searcher"]["max_trials"] = 4``; the value is
    parsed as YAML 1.2 (``1e-4`` is a float, ``"labels=[a, b]"`` gives a list, an empty
    value gives null, i.e. the default). Missing intermediate mappings are created. A
    malformed override (no ``=``, an empty key part, invalid YAML, a path through a
    non-mapping) is a problem and sets nothing.
    """
    problems: list[Problem] = []
    overridden: Overridden = {}
    for text in overrides:
        key, sep, raw_value = text.partition("=")
        parts = [part.strip() for part in key.split(".")]
        if not sep or not all(parts):
            problems.append(
                (
                    (key.strip() or text,),
                    f"malformed override '{text}': expected dotted.key=value, "
                    "e.g. searcher.max_trials=4",
                )
            )
            continue
        try:
            value = load_value(raw_value)
        except yaml.YAMLError as exc:
            problem = getattr(exc, "problem", None) or "invalid YAML"
            message = f"malformed override '{text}': the value is not valid YAML ({problem})"
            problems.append((tuple(parts), message))
            continue
        node: Any = data
        for depth, part in enumerate(parts[:-1]):
            child = node.get(part)
            if child is None:
                child = node[part] = {}
            if not isinstance(child, dict):
                where = ".".join(parts[: depth + 1])
                problems.append(
                    (
                        tuple(parts),
                        f"malformed override '{text}': '{where}' is not a mapping",
                    )
                )
                break
            node = child
        else:
            node[parts[-1]] = value
            overridden[tuple(parts)] = text
    return problems, overridden


def overridden_document(source: str | Mapping[str, Any], overrides: Sequence[str]) -> Any:
    """The user's config with only ``overrides`` changed: YAML text is loaded (not
    validated, no defaults filled in), a mapping is deep-copied, then each override sets its
    key as :func:`apply_overrides` does. What the user did not write stays unwritten, so a
    master fills in its own defaults (``checkpoint_storage.host_path`` under *its* home).

    Raises :class:`ConfigError` for YAML that does not load or a malformed override; call it
    after validating ``source`` with the same overrides (``parse_config``) for full messages.
    """
    if isinstance(source, str):
        data, _ = load_yaml(source)
    else:
        data = copy.deepcopy(dict(source))
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError([ConfigIssue("", "the config is not a mapping", None)], "<config>")
    problems, _ = apply_overrides(data, overrides)
    if problems:
        raise ConfigError(
            [ConfigIssue(format_path(path), message, None) for path, message in problems],
            "<config>",
        )
    return data
