"""YAML loading that remembers the source line of every mapping key and list item."""

from __future__ import annotations

import re
from typing import Any

import yaml

from pedl.config._issues import ConfigError, ConfigIssue, PathElement, format_path
from pedl.config._limits import (
    MAX_CONFIG_DEPTH,
    MAX_CONFIG_NODES,
    parse_integer,
    text_problem,
)

LineTable = dict[tuple[PathElement, ...], int]
"""Maps a config path (tuple of keys and indices) to the 1-based line where it appears."""


def _refusal(problem: str, mark: Any) -> yaml.composer.ComposerError:
    return yaml.composer.ComposerError(None, None, problem, mark)


class ConfigLoader(yaml.SafeLoader):
    """A SafeLoader that reads numbers as YAML 1.2 (and Determined) do, and refuses, while it
    composes the node tree and before it builds anything, a document over the bounds of
    :mod:`._limits`.

    PyYAML follows YAML 1.1, where a float needs a dot and a signed exponent, so ``1e-4``,
    ``1E5`` and ``1.0e5`` would be strings. Here any YAML 1.2 float, exponent form
    included, is a float; everything else resolves as in ``SafeLoader``.

    Bounds (a ``yaml.ComposerError`` at the offending node): at most ``MAX_CONFIG_NODES``
    nodes counted with every alias expanded (each alias adds its anchor's expanded size, so a
    "billion laughs" is refused after a few hundred nodes, and nothing grows); at most
    ``MAX_CONFIG_DEPTH`` levels, aliases expanded; no alias inside its own anchor (a recursive
    structure); no scalar with a NUL character or a lone UTF-16 surrogate (escapes such as
    ``"\\0"`` and ``"\\udcff"`` produce them). An integer with more digits than Python
    converts from text is read as a :class:`~._limits.LongInteger` (refused, naming its
    field, with the other integers out of range), not raised as a ``ValueError``.
    """

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._values = 0
        self._depth = 0
        self._deepest = 0
        self._sizes: dict[int, tuple[int, int]] = {}  # id(node) -> (expanded nodes, height)

    def _count(self, nodes: int, mark: Any) -> None:
        self._values += nodes
        if self._values > MAX_CONFIG_NODES:
            raise _refusal(
                f"the config has more than {MAX_CONFIG_NODES:,} values with its aliases "
                "expanded; it is too large to be an experiment config",
                mark,
            )

    def _reach(self, depth: int, mark: Any) -> None:
        if depth > MAX_CONFIG_DEPTH:
            raise _refusal(
                f"nested deeper than {MAX_CONFIG_DEPTH} levels of mappings and lists "
                "(aliases expanded)",
                mark,
            )
        self._deepest = max(self._deepest, depth)

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node | None:
        event = self.peek_event()
        if isinstance(event, yaml.AliasEvent):
            anchored = self.anchors.get(event.anchor)
            if anchored is not None:
                size = self._sizes.get(id(anchored))
                if size is None:
                    raise _refusal(
                        f"alias *{event.anchor} is inside its own anchor (a recursive "
                        "structure, which a config cannot be)",
                        event.start_mark,
                    )
                self._count(size[0], event.start_mark)
                self._reach(self._depth + size[1], event.start_mark)
            return super().compose_node(parent, index)
        self._depth += 1
        outer_deepest, start = self._deepest, self._values
        self._deepest = 0
        self._reach(self._depth, event.start_mark)
        self._count(1, event.start_mark)
        node = super().compose_node(parent, index)
        if node is None:
            return None
        if isinstance(node, yaml.ScalarNode):
            problem = text_problem(node.value)
            if problem is not None:
                raise _refusal(problem, node.start_mark)
        self._sizes[id(node)] = (self._values - start, self._deepest - self._depth + 1)
        self._deepest = max(outer_deepest, self._deepest)
        self._depth -= 1
        return node


def _construct_int(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> int:
    try:
        value: int = yaml.SafeLoader.construct_yaml_int(loader, node)
    except ValueError:  # too many digits to convert (else parse_integer raises it again)
        return parse_integer(str(loader.construct_scalar(node)))
    return value


ConfigLoader.add_constructor("tag:yaml.org,2002:int", _construct_int)

# Checked after SafeLoader's own resolvers, so it only decides what they leave a string.
_YAML12_FLOAT = re.compile(r"^[-+]?(?:[0-9][0-9_]*(?:\.[0-9_]*)?|\.[0-9_]+)[eE][-+]?[0-9]+$")
ConfigLoader.add_implicit_resolver("tag:yaml.org,2002:float", _YAML12_FLOAT, list("-+.0123456789"))


def load_value(text: str) -> Any:
    """One YAML value (e.g. an override's right-hand side), numbers read as YAML 1.2, within
    the bounds of :class:`ConfigLoader` (raises ``yaml.YAMLError`` otherwise)."""
    return yaml.load(text, Loader=ConfigLoader)  # a SafeLoader subclass


class _LineLoader(ConfigLoader):
    """A ConfigLoader; lines are read off the composed node tree, not during construction."""


def _key_of(loader: _LineLoader, node: yaml.Node) -> PathElement | None:
    if node.tag == "tag:yaml.org,2002:merge":
        return "<<"  # a merge key has no constructor of its own
    if isinstance(node, yaml.ScalarNode):
        value = loader.construct_object(node)
        if isinstance(value, str | int) and not isinstance(value, bool):
            return value
        return str(value)
    return None


def _walk(
    loader: _LineLoader,
    node: yaml.Node,
    path: tuple[PathElement, ...],
    table: LineTable,
    issues: list[ConfigIssue],
) -> None:
    if isinstance(node, yaml.MappingNode):
        seen: dict[PathElement, int] = {}
        for key_node, value_node in node.value:
            key = _key_of(loader, key_node)
            if key is None or key == "<<":
                continue
            line = key_node.start_mark.line + 1
            child = (*path, key)
            if key in seen:
                issues.append(
                    ConfigIssue(
                        format_path(child),
                        f"duplicate key '{key}' (first given on line {seen[key]})",
                        line,
                    )
                )
            seen[key] = line
            table[child] = line
            _walk(loader, value_node, child, table, issues)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            child = (*path, index)
            table[child] = item.start_mark.line + 1
            _walk(loader, item, child, table, issues)


def load_yaml(text: str, source: str = "<config>") -> tuple[Any, LineTable]:
    """Parse one YAML document; return the data and a table of source lines per path.

    Raises ConfigError (with the line) on a YAML syntax error, a character YAML does not
    allow (a NUL, other control characters), a duplicate mapping key, or a document over the
    bounds of :class:`ConfigLoader`. An empty document yields ``None``.
    """
    try:
        loader = _LineLoader(text)
    except yaml.reader.ReaderError as exc:  # a character YAML does not allow (a raw NUL, ...)
        at_line = text.count("\n", 0, exc.position) + 1
        refused = (
            "NUL characters are not allowed"
            if exc.character == 0
            else f"character #x{exc.character:04x} is not allowed ({exc.reason})"
        )
        raise ConfigError([ConfigIssue("", f"invalid YAML: {refused}", at_line)], source) from None
    try:
        node = loader.get_single_node()
        if node is None:
            return None, {}
        table: LineTable = {(): node.start_mark.line + 1}
        issues: list[ConfigIssue] = []
        _walk(loader, node, (), table, issues)
        data = loader.construct_document(node)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else None
        problem = exc.problem or exc.context or "could not parse"
        raise ConfigError([ConfigIssue("", f"invalid YAML: {problem}", line)], source) from None
    except yaml.YAMLError as exc:
        raise ConfigError([ConfigIssue("", f"invalid YAML: {exc}")], source) from None
    finally:
        loader.dispose()
    if issues:
        raise ConfigError(issues, source)
    return data, table
