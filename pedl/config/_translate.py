"""Translation of pydantic validation errors into plain-words problems with user paths."""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic_core import ErrorDetails

from pedl.config._base import CUSTOM_ERROR_TYPE
from pedl.config._hyperparameters import HYPERPARAMETER_TYPES
from pedl.config._issues import PathElement, Problem, describe_value
from pedl.config._length import LENGTH_UNITS
from pedl.config._searcher import SEARCHER_NAMES
from pedl.config._storage import STORAGE_TYPES

# Union tag prefix -> (discriminating key, the valid values to list).
_UNIONS: dict[str, tuple[str, tuple[str, ...]]] = {
    "hp": ("type", HYPERPARAMETER_TYPES),
    "searcher": ("name", SEARCHER_NAMES),
    "storage": ("type", STORAGE_TYPES),
}
_TAG = re.compile(r"^(hp|searcher|storage|env):")

_TYPE_WORDS = {
    "int_type": "an integer",
    "int_parsing": "an integer",
    "int_from_float": "an integer",
    "float_type": "a number",
    "float_parsing": "a number",
    "bool_type": "true or false",
    "bool_parsing": "true or false",
    "string_type": "a string",
    "dict_type": "a mapping",
    "model_type": "a mapping",
    "model_attributes_type": "a mapping",
    "list_type": "a list",
}


def _is_tag(element: PathElement) -> bool:
    return isinstance(element, str) and (bool(_TAG.match(element)) or "[" in element)


def _resolve(loc: Sequence[PathElement], data: Any) -> tuple[tuple[PathElement, ...], Any, Any]:
    """Walk ``loc`` through the raw data: the user-facing path, the parent node, the node.

    Union tags and pydantic-internal steps are dropped; a step that is not in the data
    (a missing or unknown field) is kept in the path.
    """
    path: list[PathElement] = []
    parent: Any = None
    node: Any = data
    for element in loc:
        in_mapping = isinstance(node, Mapping) and element in node
        in_list = (
            isinstance(node, list | tuple) and isinstance(element, int) and 0 <= element < len(node)
        )
        if in_mapping or in_list:
            parent, node = node, node[element]
            path.append(element)
        elif element == "value" and isinstance(node, Mapping):
            units = [key for key in node if key in LENGTH_UNITS]
            if len(units) == 1:
                parent, node = node, node[units[0]]
                path.append(units[0])
        elif not _is_tag(element):
            parent, node = node, None
            path.append(element)
    return tuple(path), parent, node


def _suggest(word: Any, choices: Sequence[str]) -> str:
    if not isinstance(word, str):
        return ""
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f"; did you mean '{close[0]}'?" if close else ""


def _quoted_choices(expected: str) -> list[str]:
    return re.findall(r"'([^']*)'", expected)


def _union_problem(error: ErrorDetails, path: tuple[PathElement, ...], node: Any) -> Problem | None:
    ctx = error.get("ctx") or {}
    tags = _quoted_choices(str(ctx.get("expected_tags", "")))
    prefix = tags[0].split(":", 1)[0] if tags else ""
    if error["type"] == "union_tag_not_found":
        # The discriminator functions are named "<prefix>_tag" (see tag_of).
        named = re.match(r"_?(\w+?)_tag\(\)", str(ctx.get("discriminator", "")))
        prefix = named.group(1) if named else ""
    if prefix not in _UNIONS:
        return None
    key, names = _UNIONS[prefix]
    if not isinstance(node, Mapping):
        return path, f"expected a mapping, got {describe_value(node)}"
    listing = ", ".join(names)
    if error["type"] == "union_tag_not_found":
        return (*path, key), f"missing required field '{key}' (one of {listing})"
    value = node.get(key)
    return (
        (*path, key),
        f"must be one of {listing}; got {describe_value(value)}{_suggest(value, names)}",
    )


def translate_errors(
    errors: Sequence[ErrorDetails],
    data: Any,
    known_fields: Mapping[int, Sequence[str]],
) -> list[Problem]:
    """Turn pydantic's errors for ``data`` into problems: user-facing path and message.

    ``known_fields`` maps ``id()`` of mappings in ``data`` to the field names valid there
    (recorded during validation), for "did you mean" suggestions on unknown fields.
    """
    problems: list[Problem] = []
    for error in errors:
        path, parent, node = _resolve(error["loc"], data)
        kind = error["type"]
        value = error.get("input")
        ctx = error.get("ctx") or {}
        last = path[-1] if path else ""
        if kind == CUSTOM_ERROR_TYPE:
            at = ctx.get("at")
            problems.append(((*path, at) if at else path, error["msg"]))
        elif kind == "missing":
            problems.append((path, f"missing required field '{last}'"))
        elif kind == "extra_forbidden":
            valid = known_fields.get(id(parent), ())
            problems.append((path, f"unknown field '{last}'{_suggest(last, valid)}"))
        elif kind in ("union_tag_invalid", "union_tag_not_found"):
            problem = _union_problem(error, path, node)
            problems.append(problem or (path, error["msg"]))
        elif kind in _TYPE_WORDS:
            problems.append((path, f"expected {_TYPE_WORDS[kind]}, got {describe_value(value)}"))
        elif kind == "literal_error":
            choices = _quoted_choices(str(ctx.get("expected", "")))
            problems.append(
                (
                    path,
                    f"must be one of {', '.join(choices)}; got {describe_value(value)}"
                    f"{_suggest(value, choices)}",
                )
            )
        elif kind in ("greater_than_equal", "greater_than", "less_than_equal", "less_than"):
            op, bound = {
                "greater_than_equal": (">=", ctx.get("ge")),
                "greater_than": (">", ctx.get("gt")),
                "less_than_equal": ("<=", ctx.get("le")),
                "less_than": ("<", ctx.get("lt")),
            }[kind]
            problems.append((path, f"must be {op} {bound}, got {describe_value(value)}"))
        elif kind == "too_short":
            problems.append((path, "must not be empty"))
        else:
            message = str(error["msg"])
            problems.append((path, message[:1].lower() + message[1:]))
    return problems
