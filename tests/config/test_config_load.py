"""Valid configs: every field, defaults, legacy names, overrides, lengths, round trips."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from pedl.config import (
    DEFAULT_HOST_PATH,
    AdaptiveASHASearcherConfig,
    ConfigError,
    ConstHyperparameter,
    CustomSearcherConfig,
    DirectoryStorageConfig,
    EnvironmentVariablesMap,
    ExperimentConfig,
    GCSStorageConfig,
    GridSearcherConfig,
    IntHyperparameter,
    Length,
    LogHyperparameter,
    RandomSearcherConfig,
    S3StorageConfig,
    SharedFSStorageConfig,
    SingleSearcherConfig,
    load_config,
    parse_config,
)

DATA = Path(__file__).parent / "data"


def as_model(text: str) -> ExperimentConfig:
    """The config's models without the runnability checks of ``parse_config``: Determined's
    format (e.g. adaptive_asha, gcs) still loads as typed models."""
    data: Any = yaml.safe_load(text)
    return ExperimentConfig.model_validate(data)


MINIMAL = """
searcher:
  name: single
  metric: loss
  max_length:
    batches: 100
"""


def test_const_example_loads_every_field() -> None:
    config = load_config(DATA / "const.yaml")
    assert config.name == "mnist_keras_const"
    assert config.description == "MNIST with a small CNN, fixed hyperparameters"
    assert config.labels == ["mnist", "keras"]
    assert config.data == {"url": "https://example.invalid/mnist.npz", "cache_dir": "/tmp/mnist"}
    assert config.entrypoint == "model_def:MNISTTrial"
    hp = config.hyperparameters
    assert hp["global_batch_size"] == ConstHyperparameter(type="const", val=64)
    assert isinstance(hp["optimizer"], dict)
    assert hp["optimizer"]["learning_rate"] == ConstHyperparameter(type="const", val=0.001)
    assert hp["optimizer"]["betas"] == ConstHyperparameter(type="const", val=[0.9, 0.999])
    assert hp["layers"]["conv"]["filters"] == ConstHyperparameter(type="const", val=32)
    assert isinstance(config.searcher, SingleSearcherConfig)
    assert config.searcher.metric == "val_accuracy"
    assert config.searcher.smaller_is_better is False
    assert config.searcher.max_length == Length(unit="epochs", value=2)
    assert config.records_per_epoch == 60000
    assert config.scheduling_unit == 50
    assert config.min_validation_period == Length(unit="epochs", value=1)
    assert config.min_checkpoint_period == Length(unit="batches", value=500)
    assert config.checkpoint_policy == "all"
    assert config.perform_initial_validation is True
    assert config.max_restarts == 2
    storage = config.checkpoint_storage
    assert isinstance(storage, SharedFSStorageConfig)
    assert (storage.host_path, storage.storage_path) == ("/mnt/checkpoints", "mnist")
    assert (storage.save_experiment_best, storage.save_trial_best, storage.save_trial_latest) == (
        1,
        2,
        3,
    )
    res = config.resources
    assert (res.slots_per_trial, res.max_slots, res.priority, res.weight) == (2, 8, 42, 0.5)
    assert res.shm_size == "4G"
    assert config.environment.env_dict(gpu=True) == {
        "TF_CPP_MIN_LOG_LEVEL": "2",
        "DATA_ROOT": "/data",
        # Its image is one of Determined's TensorFlow images: Keras 2 mode.
        "TF_USE_LEGACY_KERAS": "1",
        "PEDL_KERAS2_IMAGE": "determinedai/environments:cuda-11.8-tf-2.12-gpu",
    }
    assert config.environment.env_dict(gpu=False) == config.environment.env_dict(gpu=True)
    assert config.reproducibility.experiment_seed == 1234
    assert config.bind_mounts[0]["container_path"] == "/data"
    assert (config.workspace, config.project) == ("research", "mnist")


def test_grid_random_asha_examples_load() -> None:
    grid = load_config(DATA / "grid.yaml")
    assert isinstance(grid.searcher, GridSearcherConfig)
    assert grid.searcher.max_concurrent_trials == 4
    assert grid.hyperparameters["learning_rate"] == LogHyperparameter(
        type="log", minval=-4, maxval=-2, base=10, count=3
    )
    assert grid.hyperparameters["dense"]["units"] == IntHyperparameter(
        type="int", minval=64, maxval=256, count=3
    )

    rnd = load_config(DATA / "random.yaml")
    assert isinstance(rnd.searcher, RandomSearcherConfig)
    assert rnd.searcher.max_trials == 16
    assert rnd.searcher.max_length == Length(unit="records", value=128000)
    assert isinstance(rnd.environment.environment_variables, EnvironmentVariablesMap)
    assert rnd.environment.env_dict(gpu=False) == {"OMP_NUM_THREADS": "4"}
    assert rnd.environment.env_dict(gpu=True) == {"NCCL_DEBUG": "INFO"}
    assert isinstance(rnd.checkpoint_storage, SharedFSStorageConfig)
    assert rnd.checkpoint_storage.storage_path == "mnist"

    asha = as_model(load_text("asha.yaml"))
    s = asha.searcher
    assert isinstance(s, AdaptiveASHASearcherConfig)
    assert (s.max_trials, s.mode, s.divisor, s.max_rungs) == (100, "aggressive", 3.0, 4)
    assert (s.max_concurrent_trials, s.stop_once, s.smaller_is_better) == (8, True, False)
    assert isinstance(asha.checkpoint_storage, GCSStorageConfig)
    assert asha.checkpoint_storage.bucket == "my-bucket"
    s3 = as_model(
        "searcher: {name: single, metric: m, max_length: {batches: 1}}\n"
        "checkpoint_storage: {type: s3, bucket: b, endpoint_url: 'http://127.0.0.1:9000'}\n"
    ).checkpoint_storage
    assert isinstance(s3, S3StorageConfig)
    assert (s3.endpoint_url, s3.access_key) == ("http://127.0.0.1:9000", None)


def test_defaults() -> None:
    before = int(time.time())
    config = parse_config(MINIMAL)
    after = int(time.time())
    assert config.name is None and config.description is None and config.entrypoint is None
    assert config.labels == [] and config.data == {} and config.hyperparameters == {}
    assert config.records_per_epoch == 0
    assert config.scheduling_unit == 100
    assert config.min_validation_period == Length(unit="batches", value=0)
    assert config.min_checkpoint_period == Length(unit="batches", value=0)
    assert config.checkpoint_policy == "best"
    assert config.perform_initial_validation is False
    assert config.max_restarts == 5
    storage = config.checkpoint_storage
    assert isinstance(storage, SharedFSStorageConfig)
    assert storage.host_path == DEFAULT_HOST_PATH == "~/.pedl/checkpoints"
    assert (storage.save_experiment_best, storage.save_trial_best, storage.save_trial_latest) == (
        0,
        1,
        1,
    )
    assert storage.propagation == "rprivate"
    res = config.resources
    assert (res.slots_per_trial, res.max_slots, res.priority, res.weight) == (1, None, None, 1.0)
    assert config.environment.env_dict(gpu=True) == {}
    assert before <= config.reproducibility.experiment_seed <= after
    assert config.searcher.smaller_is_better is True


def test_searcher_defaults_follow_determined() -> None:
    base = "searcher: {name: %s, metric: m, max_length: {batches: 8}%s}"
    grid = parse_config(base % ("grid", "")).searcher
    assert isinstance(grid, GridSearcherConfig) and grid.max_concurrent_trials == 16
    rnd = parse_config(base % ("random", ", max_trials: 3")).searcher
    assert isinstance(rnd, RandomSearcherConfig) and rnd.max_concurrent_trials == 16
    asha = as_model(base % ("adaptive_asha", ", max_trials: 3")).searcher
    assert isinstance(asha, AdaptiveASHASearcherConfig)
    assert (asha.max_rungs, asha.divisor, asha.mode, asha.bracket_rungs) == (5, 4.0, "standard", [])
    assert (asha.stop_once, asha.max_concurrent_trials, asha.time_metric) == (False, 16, None)
    halving = as_model(base % ("async_halving", ", num_rungs: 3, max_trials: 9")).searcher
    assert (halving.divisor, halving.max_concurrent_trials, halving.stop_once) == (  # type: ignore[union-attr]
        4.0,
        16,
        False,
    )
    custom = as_model("searcher: {name: custom, metric: m}").searcher
    assert isinstance(custom, CustomSearcherConfig) and custom.max_length is None
    timed = as_model(
        "searcher: {name: adaptive_asha, metric: m, max_trials: 2, time_metric: batches, "
        "max_time: 1000}"
    ).searcher
    assert isinstance(timed, AdaptiveASHASearcherConfig) and timed.max_length is None


def test_null_means_default_like_determined() -> None:
    config = parse_config(
        MINIMAL + "max_restarts: null\nlabels: null\nresources:\n  weight: null\n"
    )
    assert config.max_restarts == 5
    assert config.labels == []
    assert config.resources.weight == 1.0


def test_legacy_names_are_translated() -> None:
    legacy = load_config(DATA / "legacy.yaml")
    assert legacy.scheduling_unit == 20
    assert legacy.min_validation_period == Length(unit="batches", value=100)
    assert legacy.min_checkpoint_period == Length(unit="batches", value=200)
    assert legacy.searcher.max_length == Length(unit="batches", value=600)  # type: ignore[union-attr]

    canonical = parse_config(MINIMAL + "scheduling_unit: 20\n")
    renamed = parse_config(MINIMAL + "batches_per_step: 20\n")
    assert canonical.scheduling_unit == renamed.scheduling_unit == 20

    steps = parse_config(
        "searcher: {name: random, metric: m, max_trials: 4, target_trial_steps: 3}"
    )
    assert steps.searcher.max_length == Length(unit="batches", value=300)  # type: ignore[union-attr]


def test_entrypoint_argv_list_is_joined() -> None:
    config = parse_config(MINIMAL + "entrypoint: [python3, train.py, --name, my run]\n")
    assert config.entrypoint == "python3 train.py --name 'my run'"


def test_other_storage_and_environment_forms() -> None:
    directory = parse_config(
        MINIMAL + "checkpoint_storage: {type: directory, container_path: /ckpt}\n"
    ).checkpoint_storage
    assert isinstance(directory, DirectoryStorageConfig) and directory.container_path == "/ckpt"
    env = parse_config(
        MINIMAL + "environment:\n  environment_variables:\n    cpu: [A=1]\n    cuda: [B=2]\n"
    ).environment
    assert env.env_dict(gpu=True) == {"B": "2"}
    assert env.env_dict(gpu=False) == {"A": "1"}


def test_overrides_apply_before_validation() -> None:
    config = parse_config(
        load_text("random.yaml"),
        overrides=[
            "searcher.max_trials=4",
            "hyperparameters.learning_rate=0.1",
            "labels=[a, b]",
            "resources.slots_per_trial=2",
            "environment.environment_variables=[X=1]",
        ],
    )
    assert config.searcher.max_trials == 4  # type: ignore[union-attr]
    assert config.hyperparameters["learning_rate"] == ConstHyperparameter(type="const", val=0.1)
    assert config.labels == ["a", "b"]
    assert config.resources.slots_per_trial == 2
    assert config.environment.env_dict(gpu=True) == {"X": "1"}
    # The override can also bring a legacy name, or a new section.
    legacy = parse_config(MINIMAL, overrides=["batches_per_step=7", "data.path=/x"])
    assert legacy.scheduling_unit == 7
    assert legacy.data == {"path": "/x"}


def test_mapping_source_is_not_modified() -> None:
    raw = {
        "batches_per_step": 10,
        "searcher": {"name": "single", "metric": "loss", "max_steps": 2},
    }
    config = parse_config(raw, overrides=["searcher.metric=acc"])
    assert config.searcher.max_length == Length(unit="batches", value=20)  # type: ignore[union-attr]
    assert config.searcher.metric == "acc"
    assert raw == {
        "batches_per_step": 10,
        "searcher": {"name": "single", "metric": "loss", "max_steps": 2},
    }


@pytest.mark.parametrize("name", ["const.yaml", "grid.yaml", "random.yaml", "asha.yaml"])
def test_as_dict_round_trips(name: str) -> None:
    runnable = name != "asha.yaml"
    config = load_config(DATA / name) if runnable else as_model(load_text(name))
    as_dict = config.as_dict()
    again = parse_config(as_dict) if runnable else ExperimentConfig.model_validate(as_dict)
    assert again == config
    assert again.as_dict() == as_dict
    assert "batches_per_step" not in as_dict
    assert as_dict["searcher"]["max_length"] in (
        {"batches": 1000},
        {"records": 128000},
        {"epochs": 2},
        {"epochs": 10},
    )


def test_as_dict_uses_canonical_names() -> None:
    as_dict = load_config(DATA / "legacy.yaml").as_dict()
    assert as_dict["scheduling_unit"] == 20
    assert as_dict["min_validation_period"] == {"batches": 100}
    assert as_dict["searcher"]["max_length"] == {"batches": 600}
    assert "max_steps" not in as_dict["searcher"]
    assert as_dict["hyperparameters"] == {"lr": {"type": "const", "val": 0.01}}


def test_config_is_frozen() -> None:
    config = parse_config(MINIMAL)
    with pytest.raises(ValueError):
        config.max_restarts = 3  # type: ignore[misc]


def test_length_to_batches() -> None:
    assert Length(unit="batches", value=7).to_batches(32, 0) == 7
    assert Length(unit="records", value=100).to_batches(32, 0) == 4
    assert Length(unit="records", value=96).to_batches(32, 0) == 3
    assert Length(unit="epochs", value=2).to_batches(32, 100) == 7
    with pytest.raises(ValueError, match="records_per_epoch"):
        Length(unit="epochs", value=1).to_batches(32, 0)
    config = load_config(DATA / "const.yaml")
    assert config.length_to_batches(config.searcher.max_length, 64) == 1875  # type: ignore[union-attr,arg-type]
    assert config.length_to_batches(config.min_validation_period, 64) == 938


def test_load_config_accepts_str_path_and_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "exp.yaml"
    path.write_text(MINIMAL + "max_restarts: -1\n")
    with pytest.raises(ConfigError) as info:
        load_config(str(path))
    assert info.value.source == "exp.yaml"
    assert str(info.value).startswith("1 problem in exp.yaml:\n  line 7: max_restarts: ")


def load_text(name: str) -> str:
    return (DATA / name).read_text()


def test_experiment_config_is_a_pydantic_model() -> None:
    config = ExperimentConfig.model_validate(
        {"searcher": {"name": "single", "metric": "l", "max_length": {"batches": 1}}}
    )
    assert config.searcher.max_length == Length.batches(1)  # type: ignore[union-attr]


def test_exponent_floats_are_floats_as_in_yaml_1_2() -> None:
    # PyYAML (YAML 1.1) reads 1e-4 as a string; Determined (YAML 1.2) as a float.
    config = parse_config(
        MINIMAL
        + "hyperparameters:\n  lr: 1e-4\n  wd: 1E5\n  b: 1.0e5\n  c: .5e3\n  d: -2e+3\n"
        + "  name: e5\n  version: 1e\n  n: 12\n  x: 1.5\n"
    )
    values = {name: spec.val for name, spec in config.hyperparameters.items()}  # type: ignore[union-attr]
    assert values == {
        "lr": 1e-4,
        "wd": 1e5,
        "b": 1e5,
        "c": 500.0,
        "d": -2000.0,
        "name": "e5",
        "version": "1e",
        "n": 12,
        "x": 1.5,
    }
    assert all(type(values[k]) is float for k in ("lr", "wd", "b", "c", "d", "x"))
    space = parse_config(
        MINIMAL + "hyperparameters:\n  lr: {type: double, minval: 1e-5, maxval: 1e-1}\n"
    ).hyperparameters["lr"]
    assert (space.minval, space.maxval) == (1e-5, 1e-1)  # type: ignore[union-attr]
    overridden = parse_config(MINIMAL, overrides=["hyperparameters.lr=1e-4"])
    assert overridden.hyperparameters["lr"] == ConstHyperparameter(type="const", val=1e-4)
    # Only the config loader reads YAML 1.2 numbers; yaml.safe_load is left as it was.
    assert yaml.safe_load("1e-4") == "1e-4"
