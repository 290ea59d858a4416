"""The experiment config: the typed form of a Determined-format experiment YAML."""

from __future__ import annotations

import shlex
from typing import Annotated, Any, ClassVar, Literal

from pydantic import Field, field_validator

from pedl.config._base import ConfigModel, config_error
from pedl.config._environment import EnvironmentConfig
from pedl.config._hyperparameters import HyperparameterSpace
from pedl.config._length import Length
from pedl.config._limits import (
    MAX_DESCRIPTION,
    MAX_LABEL,
    MAX_LABELS,
    MAX_LENGTH,
    MAX_NAME,
    MAX_RESTARTS,
)
from pedl.config._reproducibility import ReproducibilityConfig
from pedl.config._resources import ResourcesConfig
from pedl.config._searcher import (
    AdaptiveASHASearcherConfig,
    AsyncHalvingSearcherConfig,
    SearcherConfig,
)
from pedl.config._storage import (
    CheckpointStorageConfig,
    default_checkpoint_storage,
    merge_over_default_storage,
)


def _never() -> Length:
    return Length(unit="batches", value=0)


class ExperimentConfig(ConfigModel):
    """A validated experiment config with every default filled in.

    Field names, defaults and meanings follow Determined's experiment-config reference.
    Legacy names are translated when parsing (``batches_per_step`` becomes
    ``scheduling_unit``, ``searcher.max_steps`` becomes ``searcher.max_length``); the model
    itself only has the canonical names. Determined keys that PEDL does not use
    (``bind_mounts``, ``optimizations``, ``profiling``, ...) are accepted and kept as given
    so that Determined configs load; ``unused_fields`` lists those a config sets.
    ``workspace`` and ``project`` are acted upon by the master (the experiment goes into
    that project).

    Build one with ``parse_config``/``load_config``, which report all problems at once
    with YAML line numbers; direct ``model_validate`` works too but raises pydantic's
    ValidationError.
    """

    name: str | None = Field(default=None, max_length=MAX_NAME)
    description: str | None = Field(default=None, max_length=MAX_DESCRIPTION)
    labels: list[Annotated[str, Field(min_length=1, max_length=MAX_LABEL)]] = Field(
        default_factory=list, max_length=MAX_LABELS
    )
    data: dict[str, Any] = Field(default_factory=dict)
    entrypoint: str | None = None
    hyperparameters: HyperparameterSpace = Field(default_factory=dict)
    searcher: SearcherConfig
    records_per_epoch: int = Field(default=0, ge=0, le=MAX_LENGTH)
    scheduling_unit: int = Field(default=100, ge=1, le=MAX_LENGTH)
    min_validation_period: Length = Field(default_factory=_never)
    min_checkpoint_period: Length = Field(default_factory=_never)
    checkpoint_policy: Literal["best", "all", "none"] = "best"
    perform_initial_validation: bool = False
    max_restarts: int = Field(default=5, ge=0, le=MAX_RESTARTS)
    checkpoint_storage: CheckpointStorageConfig = Field(default_factory=default_checkpoint_storage)
    resources: ResourcesConfig = Field(default_factory=ResourcesConfig)
    environment: EnvironmentConfig = Field(default_factory=EnvironmentConfig)
    reproducibility: ReproducibilityConfig = Field(default_factory=ReproducibilityConfig)

    # Determined keys accepted so that its configs load; PEDL does not act on them.
    ignored_fields: ClassVar[frozenset[str]] = frozenset(
        {
            "bind_mounts",
            "optimizations",
            "profiling",
            "debug",
            "internal",
            "data_layer",
            "security",
            "tensorboard_storage",
            "integrations",
            "log_policies",
            "retention_policy",
            "preemption_timeout",
            "slurm",
            "pbs",
        }
    )
    bind_mounts: list[Any] = Field(default_factory=list)
    optimizations: dict[str, Any] = Field(default_factory=dict)
    profiling: dict[str, Any] = Field(default_factory=dict)
    workspace: str | None = Field(default=None, min_length=1, max_length=128)
    """With ``project``: the workspace whose project the experiment goes into (the master
    looks both up by name; ``pedl experiment create --project_id`` wins over them)."""
    project: str | None = Field(default=None, min_length=1, max_length=128)
    """With ``workspace``: the name of the project the experiment goes into."""
    debug: bool = False
    internal: dict[str, Any] | None = None
    data_layer: dict[str, Any] | None = None
    security: dict[str, Any] | None = None
    tensorboard_storage: dict[str, Any] | None = None
    integrations: dict[str, Any] | None = None
    log_policies: list[Any] | dict[str, Any] | None = None
    retention_policy: dict[str, Any] | None = None
    preemption_timeout: int | None = None
    slurm: dict[str, Any] | None = None
    pbs: dict[str, Any] | None = None

    @field_validator("checkpoint_storage", mode="before")
    @classmethod
    def _partial_storage(cls, value: Any) -> Any:
        """A ``checkpoint_storage`` block without ``type`` (retention settings only, as
        Determined allows) is merged field by field over the default storage: ``shared_fs``
        in the master's ``checkpoint_dir`` (local mode: the run's directory), see
        :func:`pedl.engine.with_default_storage`."""
        return merge_over_default_storage(value)

    @field_validator("entrypoint", mode="before")
    @classmethod
    def _argv_entrypoint(cls, value: Any) -> Any:
        """Determined also allows an argv list; it is joined into one shell-quoted command."""
        if isinstance(value, list):
            if not value or not all(isinstance(part, str) for part in value):
                raise config_error("expected a string, or a non-empty list of strings")
            return shlex.join(value)
        return value

    def as_dict(self) -> dict[str, Any]:
        """A JSON-able dict of the whole config, defaults filled, canonical field names.

        Lengths come out in YAML form (``{batches: 100}``), hyperparameters fully typed
        (``{type: const, val: ...}``); parsing the result gives an equal config.
        """
        return self.model_dump(mode="json")

    def length_to_batches(self, length: Length, global_batch_size: int) -> int:
        """``length`` in batches, using this config's ``records_per_epoch``."""
        return length.to_batches(global_batch_size, self.records_per_epoch)

    @property
    def searcher_unit(self) -> Literal["batches", "records", "epochs"]:
        """The unit of the searcher's lengths: that of ``searcher.max_length``, or the
        ``time_metric`` of an ASHA searcher given ``max_time``, or a custom searcher's
        ``unit`` (else batches)."""
        length = _searcher_length(self.searcher)
        if length is not None:
            return length.unit
        return getattr(self.searcher, "unit", None) or "batches"  # a custom searcher's unit

    @property
    def searcher_max_length(self) -> int | None:
        """``searcher.max_length`` (an ASHA searcher's ``max_time``, when given with
        ``time_metric``) in :attr:`searcher_unit`, or ``None`` where there is none."""
        length = _searcher_length(self.searcher)
        return length.value if length is not None else None


def _searcher_length(searcher: SearcherConfig) -> Length | None:
    if isinstance(searcher, AdaptiveASHASearcherConfig | AsyncHalvingSearcherConfig):
        return searcher.length
    return searcher.max_length
