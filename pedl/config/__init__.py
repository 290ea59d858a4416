"""Experiment configuration: Determined-format YAML loaded into typed, validated models.

``load_config``/``parse_config`` return an ``ExperimentConfig`` or raise one
``ConfigError`` listing every problem with its dotted path and YAML line.
``sample_hparams``/``grid_hparams``/``flatten_hparams`` work on hyperparameter spaces.
"""

from pedl.config._environment import EnvironmentConfig, EnvironmentVariablesMap
from pedl.config._experiment import ExperimentConfig
from pedl.config._hyperparameters import (
    CategoricalHyperparameter,
    ConstHyperparameter,
    DoubleHyperparameter,
    Hyperparameter,
    HyperparameterSpace,
    IntHyperparameter,
    LogHyperparameter,
)
from pedl.config._issues import ConfigError, ConfigIssue
from pedl.config._length import Length
from pedl.config._load import load_config, parse_config
from pedl.config._reproducibility import ReproducibilityConfig
from pedl.config._resources import ResourcesConfig
from pedl.config._sampling import flatten_hparams, grid_hparams, sample_hparams
from pedl.config._searcher import (
    AdaptiveASHASearcherConfig,
    AsyncHalvingSearcherConfig,
    CustomSearcherConfig,
    GridSearcherConfig,
    RandomSearcherConfig,
    SearcherConfig,
    SingleSearcherConfig,
)
from pedl.config._storage import (
    DEFAULT_HOST_PATH,
    CheckpointStorageConfig,
    DirectoryStorageConfig,
    GCSStorageConfig,
    S3StorageConfig,
    SharedFSStorageConfig,
)

__all__ = [
    "DEFAULT_HOST_PATH",
    "AdaptiveASHASearcherConfig",
    "AsyncHalvingSearcherConfig",
    "CategoricalHyperparameter",
    "CheckpointStorageConfig",
    "ConfigError",
    "ConfigIssue",
    "ConstHyperparameter",
    "CustomSearcherConfig",
    "DirectoryStorageConfig",
    "DoubleHyperparameter",
    "EnvironmentConfig",
    "EnvironmentVariablesMap",
    "ExperimentConfig",
    "GCSStorageConfig",
    "GridSearcherConfig",
    "Hyperparameter",
    "HyperparameterSpace",
    "IntHyperparameter",
    "Length",
    "LogHyperparameter",
    "RandomSearcherConfig",
    "ReproducibilityConfig",
    "ResourcesConfig",
    "S3StorageConfig",
    "SearcherConfig",
    "SharedFSStorageConfig",
    "SingleSearcherConfig",
    "flatten_hparams",
    "grid_hparams",
    "load_config",
    "parse_config",
    "sample_hparams",
]
