"""Determined fields PEDL accepts and ignores: one warning that lists them all."""

from __future__ import annotations

import pytest

from pedl.config import (
    UNUSED_FIELDS_WARNING,
    EnvironmentConfig,
    ExperimentConfig,
    RandomSearcherConfig,
    ResourcesConfig,
    SharedFSStorageConfig,
    config_warnings,
    parse_config,
    unused_fields,
)

CLEAN = """\
name: clean
description: a config with only what PEDL uses
labels: [a]
data: {path: /data}
hyperparameters:
  global_batch_size: 32
  lr: 1e-3
searcher:
  name: random
  metric: loss
  max_trials: 2
  max_length: {batches: 10}
records_per_epoch: 100
max_restarts: 1
resources: {slots_per_trial: 1, max_slots: 4, priority: 10, weight: 2}
environment:
  environment_variables: [A=1]
checkpoint_storage: {type: shared_fs, host_path: /tmp/ckpt, save_trial_best: 2}
reproducibility: {experiment_seed: 1}
"""

DETERMINED = (
    (
        CLEAN
        + """\
workspace: Uncategorized
project: Uncategorized
bind_mounts:
  - {host_path: /data, container_path: /data, read_only: true}
debug: false
profiling: {enabled: true, begin_on_batch: 0}
optimizations: {aggregation_frequency: 2}
tensorboard_storage: {type: shared_fs, host_path: /tmp/tb}
"""
    )
    .replace(
        "  environment_variables: [A=1]\n",
        "  environment_variables: [A=1]\n"
        "  image: determinedai/environments:cuda-11.8\n"
        "  pod_spec: {spec: {containers: []}}\n"
        "  force_pull_image: false\n",
    )
    .replace("max_slots: 4,", "max_slots: 4, resource_pool: gpu-pool, shm_size: 4G,")
)

EXPECTED = [
    "bind_mounts",
    "environment.image",
    "environment.pod_spec",
    "optimizations",
    "profiling",
    "resources.resource_pool",
    "resources.shm_size",
    "tensorboard_storage",
]
"""``workspace`` and ``project`` are not among them: the master acts on them."""


def test_determined_config_gets_one_warning_listing_each_ignored_field() -> None:
    config = parse_config(DETERMINED)
    assert unused_fields(config) == EXPECTED
    warnings = config_warnings(config)
    assert warnings == [f"{UNUSED_FIELDS_WARNING}: {', '.join(EXPECTED)}"]
    assert warnings[0].startswith(
        "these config fields are accepted for compatibility with Determined and ignored by "
        "PEDL: bind_mounts, environment.image, "
    )


def test_clean_config_gets_no_warning() -> None:
    config = parse_config(CLEAN)
    assert unused_fields(config) == []
    assert config_warnings(config) == []


def test_fields_at_their_default_are_not_reported() -> None:
    # debug: false above is Determined's default, so it is not listed; neither is an
    # exported config that spells out every default.
    assert "debug" not in unused_fields(parse_config(DETERMINED))
    assert config_warnings(parse_config(parse_config(CLEAN).as_dict())) == []
    explicit = CLEAN + "bind_mounts: []\nprofiling: {}\nworkspace: null\n"
    assert config_warnings(parse_config(explicit)) == []


def test_canonical_form_keeps_the_warning() -> None:
    # The SDK sends the canonical form when overrides are given; the fields still show.
    again = parse_config(parse_config(DETERMINED).as_dict())
    assert unused_fields(again) == EXPECTED


@pytest.mark.parametrize(
    ("override", "path"),
    [
        ("checkpoint_storage.propagation=rshared", "checkpoint_storage.propagation"),
        ("resources.agent_label=x", "resources.agent_label"),
        ("environment.ports={web: 8080}", "environment.ports"),
        ("preemption_timeout=60", "preemption_timeout"),
    ],
)
def test_each_section_is_searched(override: str, path: str) -> None:
    assert unused_fields(parse_config(CLEAN, overrides=[override])) == [path]


def test_every_ignored_field_is_a_field() -> None:
    for model in (
        ExperimentConfig,
        EnvironmentConfig,
        ResourcesConfig,
        SharedFSStorageConfig,
        RandomSearcherConfig,
    ):
        assert model.ignored_fields <= set(model.model_fields), model.__name__
        assert "ignored_fields" not in model.model_fields
