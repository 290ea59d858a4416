"""Hypothesis-generated invalid experiment configs: each one is refused with field-level
messages (a ConfigError whose every issue names a field; a 4xx from the master naming a field
under ``config``), and none crashes anything. Seeded and bounded."""

from __future__ import annotations

import copy
import json
import math
from typing import Any

import httpx
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pedl.config import ConfigError, ExperimentConfig, parse_config
from tests.master.helpers import experiment_body

BASE: dict[str, Any] = {
    "name": "fuzz",
    "entrypoint": "model_def:MyTrial",
    "hyperparameters": {
        "global_batch_size": 32,
        "lr": {"type": "double", "minval": 0.001, "maxval": 0.1},
        "layers": {"type": "int", "minval": 1, "maxval": 4, "count": 4},
        "act": {"type": "categorical", "vals": ["relu", "tanh"]},
    },
    "searcher": {
        "name": "random",
        "metric": "val_loss",
        "max_trials": 4,
        "max_length": {"batches": 100},
    },
    "records_per_epoch": 1000,
    "scheduling_unit": 100,
    "min_validation_period": {"batches": 50},
    "max_restarts": 2,
    "resources": {"slots_per_trial": 1},
    "checkpoint_storage": {"type": "shared_fs", "host_path": "/tmp/pedl-fuzz"},
    "environment": {"environment_variables": ["A=1"]},
}


def _paths(value: Any, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    found = [prefix] if prefix else []
    if isinstance(value, dict):
        for key, item in value.items():
            found += _paths(item, (*prefix, key))
    return found


PATHS = _paths(BASE)

_HOSTILE_TEXT = st.sampled_from(["", "a\x00b", "\udcff", "x" * 300, "../../etc", "-1", "1e999"])
_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.sampled_from([0, -5, 8.5, 10**12, 2**63, math.nan, math.inf, -math.inf]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=20),
    _HOSTILE_TEXT,
)
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=8,
)


@st.composite
def invalid_configs(draw: st.DrawFn) -> dict[str, Any]:
    """The base config with one to three mutations: a field set to a hostile value, a field
    removed, or an unknown field added."""
    config = copy.deepcopy(BASE)
    for _ in range(draw(st.integers(min_value=1, max_value=3))):
        path = draw(st.sampled_from(PATHS))
        parent: Any = config
        for key in path[:-1]:
            parent = parent.get(key) if isinstance(parent, dict) else None
        if not isinstance(parent, dict):
            continue
        kind = draw(st.sampled_from(["set", "set", "drop", "add"]))
        if kind == "set":
            parent[path[-1]] = draw(_VALUES)
        elif kind == "drop":
            parent.pop(path[-1], None)
        else:
            parent[draw(st.sampled_from(["unknwon", "\udcff", "a\x00b", "batch_size"]))] = 1
    return config


def _refused_with_fields(source: Any) -> None:
    """``parse_config(source)`` returns a config or raises ConfigError naming fields."""
    try:
        parsed = parse_config(source)
    except ConfigError as err:
        assert err.issues
        for issue in err.issues:
            assert issue.message, err
            assert issue.path or isinstance(source, str), err
            str(issue).encode("utf-8")  # printable: no lone surrogate in a message
        return
    assert isinstance(parsed, ExperimentConfig)


@settings(max_examples=120, derandomize=True)
@given(config=invalid_configs())
def test_invalid_mappings_are_refused_field_by_field(config: dict[str, Any]) -> None:
    _refused_with_fields(config)


@settings(max_examples=60, derandomize=True)
@given(config=invalid_configs())
def test_invalid_yaml_texts_are_refused_with_lines(config: dict[str, Any]) -> None:
    try:
        text = yaml.safe_dump(config, allow_unicode=False)
    except yaml.YAMLError:
        return
    _refused_with_fields(text)


@settings(max_examples=100, derandomize=True)
@given(text=st.text(alphabet=st.sampled_from(list("ab:-[]{}&*!|>'\"\n #,.\\0u")), max_size=80))
def test_arbitrary_yaml_text_never_crashes(text: str) -> None:
    _refused_with_fields(text)


@settings(
    max_examples=25,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(config=invalid_configs())
def test_the_master_refuses_them_naming_a_config_field(
    client: httpx.Client, config: dict[str, Any]
) -> None:
    body = experiment_body(config, activate=False)
    response = client.post(
        "/experiments",
        content=json.dumps(body),  # NaN as JavaScript writes it, surrogates escaped
        headers={"Content-Type": "application/json"},
    )
    assert response.status_code in (201, 400, 422), response.text
    if response.status_code == 422:
        error = response.json()["error"]
        assert error["field"].startswith(("config", "body.config")), error
        assert all(issue["message"] for issue in error["issues"]), error
