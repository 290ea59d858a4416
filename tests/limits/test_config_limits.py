"""The config's document bounds (size, depth, alias expansion, values), the grid and numeric
bounds, and the storage roots, through ``pedl.config`` alone."""

from __future__ import annotations

import os
import tracemalloc
from pathlib import Path

import pytest

from pedl.config import (
    MAX_CONFIG_BYTES,
    ConfigError,
    check_storage_roots,
    parse_config,
)

BASE = """\
entrypoint: model_def:MyTrial
hyperparameters:
  lr: 0.1
searcher:
  name: single
  metric: val_loss
  max_length: {batches: 100}
"""


def _issues(source: object) -> list[tuple[str, str, int | None]]:
    with pytest.raises(ConfigError) as caught:
        parse_config(source)  # type: ignore[arg-type]
    return [(issue.path, issue.message, issue.line) for issue in caught.value.issues]


def test_nine_levels_of_aliases_are_refused_before_anything_grows() -> None:
    levels = ['  l0: &l0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    levels += [f"  l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 9)}]" for i in range(1, 9)]
    text = BASE + "data:\n" + "\n".join(levels) + "\n"
    assert len(text) < 1024
    tracemalloc.start()
    try:
        [(_, message, line)] = _issues(text)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert "aliases expanded" in message and line is not None
    assert peak < 20 * 1024 * 1024, f"{peak} bytes"


def test_aliases_within_the_bound_and_merge_keys_load() -> None:
    text = BASE + "data:\n  a: &a {x: 1, y: [1, 2]}\n  b: {<<: *a, z: 3}\n  c: *a\n"
    data = parse_config(text).data
    assert data["b"] == {"x": 1, "y": [1, 2], "z": 3} and data["c"] == {"x": 1, "y": [1, 2]}


@pytest.mark.parametrize("text", ["data: &x [*x]\n", "data: &x {a: *x}\n"])
def test_a_recursive_alias_is_refused(text: str) -> None:
    [(_, message, _)] = _issues(BASE + text)
    assert "inside its own anchor" in message


def test_depth_is_bounded_in_yaml_and_in_mappings() -> None:
    [(_, message, _)] = _issues(BASE + "data: " + "[" * 40 + "]" * 40 + "\n")
    assert "nested deeper than 32" in message
    deep: dict[str, object] = {"x": 1}
    for _ in range(40):
        deep = {"a": deep}
    mapping = {"searcher": {"name": "single", "metric": "m", "max_length": {"batches": 1}}}
    [(path, message, _)] = _issues({**mapping, "data": deep})
    assert path.startswith("data.a.a") and "nested deeper than 32" in message
    a_thousand_deep: list[object] = []
    for _ in range(1000):
        a_thousand_deep = [a_thousand_deep]
    [(_, message, _)] = _issues({**mapping, "data": {"x": a_thousand_deep}})  # no RecursionError
    assert "nested deeper" in message


def test_size_is_bounded() -> None:
    [(path, message, _)] = _issues(BASE + "description: " + "x" * MAX_CONFIG_BYTES + "\n")
    assert path == "" and "more than the limit of 1,048,576" in message


@pytest.mark.parametrize(
    ("value", "fragment"),
    [
        ('"a\\0b"', "NUL"),
        ('"\\udcff"', "surrogate"),
        (".nan", "finite"),
        ("-.inf", "finite"),
        ("100000000000000000000", "64-bit"),
    ],
)
def test_values_no_database_stores_are_refused(value: str, fragment: str) -> None:
    [(path, message, line)] = _issues(BASE.replace("lr: 0.1", f"lr: {value}"))
    assert fragment in message and line == 3
    assert path in ("", "hyperparameters.lr")


def test_a_surrogate_key_in_a_mapping_is_named_escaped() -> None:
    config = {
        "searcher": {"name": "single", "metric": "m", "max_length": {"batches": 1}},
        "data": {"\udcff": 1},
    }
    [(path, message, _)] = _issues(config)
    assert path == "data.\\udcff" and "surrogate" in message
    path.encode("utf-8")


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("scheduling_unit", "100000000000000000"),
        ("max_restarts", "1000000"),
        ("records_per_epoch", "-1"),
        ("resources", "{slots_per_trial: 100000}"),
    ],
)
def test_numeric_fields_pedl_uses_are_bounded(field: str, value: str) -> None:
    [(path, message, _)] = _issues(BASE + f"{field}: {value}\n")
    assert path.startswith(field) and ("<=" in message or ">=" in message), message


def test_a_grid_over_the_limit_names_each_hyperparameter_and_its_count() -> None:
    text = BASE.replace("name: single", "name: grid").replace(
        "lr: 0.1",
        "lr: {type: log, base: 10, minval: -4, maxval: -1, count: 1000}\n"
        "  units: {type: int, minval: 1, maxval: 100000, count: 1000}\n"
        "  opt: {type: categorical, vals: [sgd, adam]}",
    )
    [(path, message, _)] = _issues(text)
    assert path == "hyperparameters"
    assert "2,000,000 points" in message
    assert "lr (1,000) x units (1,000) x opt (2)" in message


def test_storage_paths_must_resolve_inside_the_roots(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "ok").mkdir(parents=True)
    os.symlink("/etc", root / "escape")
    roots = [root.resolve()]

    def problems(storage: str) -> list[str]:
        config = parse_config(BASE + f"checkpoint_storage: {storage}\n")
        try:
            check_storage_roots(config, roots)
        except ConfigError as err:
            return [issue.path for issue in err.issues]
        return []

    assert problems(f"{{type: shared_fs, host_path: {root}/ok}}") == []
    assert problems(f"{{type: shared_fs, host_path: {root}, storage_path: ok}}") == []
    assert problems(f"{{type: shared_fs, host_path: {root}/escape}}") == [
        "checkpoint_storage.host_path"
    ]
    assert problems(f"{{type: shared_fs, host_path: {root}, storage_path: ../..}}") == [
        "checkpoint_storage.storage_path"
    ]
    assert problems("{type: directory, container_path: /etc}") == [
        "checkpoint_storage.container_path"
    ]
