"""Experiment configuration: Determined-format YAML loaded into typed, validated models.

``load_config``/``parse_config`` return an ``ExperimentConfig`` or raise one
``ConfigError`` listing every problem with its dotted path and YAML line; a config PEDL
cannot run (a searcher or checkpoint storage it lacks, an impossible ``global_batch_size``,
an oversized grid) is such a problem, as is a config over the bounds of size, nesting, YAML
alias expansion and values (``MAX_CONFIG_*``). ``check_storage_roots`` keeps the paths a config
names on the master's machine inside the directories the master allows.
``config_warnings``/``unused_fields`` name the Determined fields a config sets that PEDL
ignores.
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
from pedl.config._issues import ConfigError, ConfigIssue, ConfigWarning
from pedl.config._length import Length
from pedl.config._limits import (
    MAX_CONFIG_BYTES,
    MAX_CONFIG_DEPTH,
    MAX_CONFIG_NODES,
    MAX_DESCRIPTION,
    MAX_LABEL,
    MAX_LABELS,
    MAX_LENGTH,
    MAX_METRIC_NAME,
    MAX_NAME,
    MAX_RESTARTS,
    MAX_SLOTS,
    MAX_TRIALS,
)
from pedl.config._load import load_config, parse_config
from pedl.config._reproducibility import ReproducibilityConfig
from pedl.config._resources import ResourcesConfig
from pedl.config._runnable import MAX_GLOBAL_BATCH_SIZE, MAX_GRID_POINTS
from pedl.config._sampling import (
    canonical_order,
    flatten_hparams,
    grid_axis_sizes,
    grid_hparams,
    grid_size,
    sample_hparams,
)
from pedl.config._searcher import (
    MAX_OBJECTIVES,
    MULTI_OBJECTIVE_SEARCHERS,
    OPEN_LENGTH,
    SEARCHER_NAMES,
    AdaptiveASHASearcherConfig,
    AsyncHalvingSearcherConfig,
    CustomSearcherConfig,
    GPSearcherConfig,
    GridSearcherConfig,
    NSGA2SearcherConfig,
    PBTSearcherConfig,
    RandomSearcherConfig,
    SearcherConfig,
    SearcherObjective,
    SingleSearcherConfig,
    TPESearcherConfig,
)
from pedl.config._secrets import MASK, is_secret_name, mask_config
from pedl.config._storage import (
    DEFAULT_HOST_PATH,
    STORAGE_TYPES,
    AzureStorageConfig,
    CheckpointStorageConfig,
    DirectoryStorageConfig,
    GCSStorageConfig,
    S3StorageConfig,
    SharedFSStorageConfig,
)
from pedl.config._storage_roots import check_storage_roots
from pedl.config._unused import UNUSED_FIELDS_WARNING, config_warnings, unused_fields

__all__ = [
    "DEFAULT_HOST_PATH",
    "MASK",
    "MAX_CONFIG_BYTES",
    "MAX_CONFIG_DEPTH",
    "MAX_CONFIG_NODES",
    "MAX_DESCRIPTION",
    "MAX_GLOBAL_BATCH_SIZE",
    "MAX_GRID_POINTS",
    "MAX_LABEL",
    "MAX_LABELS",
    "MAX_LENGTH",
    "MAX_METRIC_NAME",
    "MAX_NAME",
    "MAX_OBJECTIVES",
    "MAX_RESTARTS",
    "MAX_SLOTS",
    "MAX_TRIALS",
    "MULTI_OBJECTIVE_SEARCHERS",
    "OPEN_LENGTH",
    "SEARCHER_NAMES",
    "STORAGE_TYPES",
    "UNUSED_FIELDS_WARNING",
    "AdaptiveASHASearcherConfig",
    "AsyncHalvingSearcherConfig",
    "AzureStorageConfig",
    "CategoricalHyperparameter",
    "CheckpointStorageConfig",
    "ConfigError",
    "ConfigIssue",
    "ConfigWarning",
    "ConstHyperparameter",
    "CustomSearcherConfig",
    "DirectoryStorageConfig",
    "DoubleHyperparameter",
    "EnvironmentConfig",
    "EnvironmentVariablesMap",
    "ExperimentConfig",
    "GCSStorageConfig",
    "GPSearcherConfig",
    "GridSearcherConfig",
    "Hyperparameter",
    "HyperparameterSpace",
    "IntHyperparameter",
    "Length",
    "LogHyperparameter",
    "NSGA2SearcherConfig",
    "PBTSearcherConfig",
    "RandomSearcherConfig",
    "ReproducibilityConfig",
    "ResourcesConfig",
    "S3StorageConfig",
    "SearcherConfig",
    "SearcherObjective",
    "SharedFSStorageConfig",
    "SingleSearcherConfig",
    "TPESearcherConfig",
    "canonical_order",
    "check_storage_roots",
    "config_warnings",
    "flatten_hparams",
    "grid_axis_sizes",
    "grid_hparams",
    "grid_size",
    "is_secret_name",
    "load_config",
    "mask_config",
    "parse_config",
    "sample_hparams",
    "unused_fields",
]
