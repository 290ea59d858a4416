"""Loading and parsing experiment configs: YAML -> overrides -> legacy names -> validation."""

from __future__ import annotations

import copy
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from pedl.config._base import KNOWN_FIELDS_CONTEXT_KEY
from pedl.config._checks import check_cross_field
from pedl.config._experiment import ExperimentConfig
from pedl.config._issues import (
    ConfigError,
    ConfigIssue,
    PathElement,
    Problem,
    describe_value,
    format_path,
)
from pedl.config._legacy import Aliases, apply_legacy
from pedl.config._limits import MAX_CONFIG_BYTES, shape_problem, value_problems
from pedl.config._overrides import Overridden, apply_overrides
from pedl.config._runnable import check_runnable, check_runnable_raw
from pedl.config._translate import translate_errors
from pedl.config._yaml import LineTable, load_yaml


def load_config(path: str | os.PathLike[str], overrides: Sequence[str] = ()) -> ExperimentConfig:
    """Read and validate the experiment config file at ``path`` (see ``parse_config``).

    Problems are reported as a ConfigError whose ``source`` is the file's name; an
    unreadable file raises the usual OSError.
    """
    file = Path(path)
    return parse_config(file.read_text(encoding="utf-8"), name=file.name, overrides=overrides)


def parse_config(
    source: str | Mapping[str, Any],
    *,
    name: str = "<config>",
    overrides: Sequence[str] = (),
) -> ExperimentConfig:
    """Validate an experiment config given as YAML text or an already-parsed mapping.

    A config over the bounds of :mod:`._limits` (size, nesting, node count with YAML aliases
    expanded) or with a value no database stores (NUL, lone surrogate, NaN, infinity, an
    integer beyond 64 bits) is refused first, naming the field. ``overrides``
    (``"dotted.key=yaml_value"``) are applied next, then legacy names are
    translated, then the config is validated, including that PEDL can run it (a searcher,
    storage type or hyperparameter setting the engine cannot carry out is a problem too).
    Every problem found is raised at once as a ConfigError naming ``name``, each with its
    dotted path, plain-words message and (for YAML text) line. A mapping ``source`` is not modified.
    """
    lines: LineTable = {}
    if isinstance(source, str):
        size = len(source.encode("utf-8", "surrogatepass"))
        if size > MAX_CONFIG_BYTES:
            message = f"the config is {size:,} bytes, more than the limit of {MAX_CONFIG_BYTES:,}"
            raise ConfigError([ConfigIssue("", message, None)], name)
        data, lines = load_yaml(source, name)
    elif isinstance(source, Mapping):
        shape = shape_problem(source)
        if shape is not None:
            raise ConfigError([ConfigIssue(format_path(shape[0]), shape[1], None)], name)
        data = copy.deepcopy(dict(source))
    else:
        raise TypeError(f"source must be YAML text or a mapping, not {type(source).__name__}")
    if data is None:
        raise ConfigError(
            [ConfigIssue("", "the config is empty; expected a mapping with a 'searcher'", 1)],
            name,
        )
    if not isinstance(data, dict):
        raise ConfigError(
            [
                ConfigIssue(
                    "",
                    f"expected a mapping of config fields at the top level, got "
                    f"{describe_value(data)}",
                    lines.get(()),
                )
            ],
            name,
        )

    override_problems, overridden = apply_overrides(data, overrides)
    values = value_problems(data)
    if values:
        raise ConfigError([_to_issue(problem, lines, overridden) for problem in values], name)
    legacy_problems, aliases = apply_legacy(data)
    runnable_problems = check_runnable_raw(data)
    # A section whose searcher/storage PEDL lacks gets that one problem, not its fields'.
    refused = [path[:-1] for path, _ in runnable_problems]
    problems = runnable_problems + [
        problem
        for problem in legacy_problems + check_cross_field(data)
        if not any(problem[0][: len(section)] == section for section in refused)
    ]
    reported = [path for path, _ in legacy_problems] + refused

    known_fields: dict[int, list[str]] = {}
    config: ExperimentConfig | None = None
    try:
        config = ExperimentConfig.model_validate(
            data, context={KNOWN_FIELDS_CONTEXT_KEY: known_fields}
        )
    except ValidationError as exc:
        for path, message in translate_errors(exc.errors(include_url=False), data, known_fields):
            user_path = _unalias(path, aliases)
            if not any(user_path[: len(done)] == done for done in reported):
                problems.append((user_path, message))

    if config is not None and not problems:
        problems += check_runnable(config)

    if problems or override_problems:
        issues = [_to_issue(problem, lines, overridden) for problem in problems]
        issues += [ConfigIssue(format_path(path), message) for path, message in override_problems]
        raise ConfigError(issues, name)
    assert config is not None
    return config


def _unalias(path: tuple[PathElement, ...], aliases: Aliases) -> tuple[PathElement, ...]:
    for canonical, written in aliases.items():
        if path[: len(canonical)] == canonical:
            return written + path[len(canonical) :]
    return path


def _to_issue(problem: Problem, lines: LineTable, overridden: Overridden) -> ConfigIssue:
    path, message = problem
    for set_path, text in overridden.items():
        if path[: len(set_path)] == set_path:
            return ConfigIssue(format_path(path), f"{message} (set by override '{text}')", None)
    line = None
    for end in range(len(path), -1, -1):
        if path[:end] in lines:
            line = lines[path[:end]]
            break
    return ConfigIssue(format_path(path), message, line)
