"""Searcher configs, one model per searcher ``name`` (Determined's names and defaults)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Discriminator, Field, Tag, field_validator, model_validator

from pedl.config._base import ConfigModel, config_error, tag_of
from pedl.config._length import LENGTH_UNITS, Length
from pedl.config._limits import MAX_LENGTH, MAX_METRIC_NAME, MAX_TRIALS

SEARCHER_NAMES: tuple[str, ...] = (
    "single",
    "grid",
    "random",
    "adaptive_asha",
    "async_halving",
    "tpe",
    "gp",
    "custom",
)


OPEN_LENGTH = MAX_LENGTH
"""The length (in batches) a trial is given when ``single``, ``grid`` or ``random`` has no
``max_length``: the training code decides how long it trains (Determined 0.38's meaning), and
ends the trial itself (a script's ``fit(epochs=...)``, a Core API loop)."""


def unitless_length(value: Any) -> Any:
    """``max_length: 100``, Determined's integer form: a length without a unit, counted in the
    steps the training code reports (Determined hands the number to the training code as is);
    PEDL counts those steps as batches, so it is ``{batches: 100}``."""
    if isinstance(value, int) and not isinstance(value, bool):
        return {"batches": value}
    return value


def _positive(length: Length | None) -> Length | None:
    if length is not None and length.value <= 0:
        raise config_error(f"must be greater than 0, got {length.value} {length.unit}")
    return length


class _SearcherBase(ConfigModel):
    """Fields every searcher has: the metric to optimise and where to warm-start from.

    Warm start: every new trial starts from the weights of checkpoint
    ``source_checkpoint_uuid``, or of the latest checkpoint of trial ``source_trial_id``
    (resolved when the experiment is created), with its batch counters at 0.
    """

    metric: str = Field(min_length=1, max_length=MAX_METRIC_NAME)
    smaller_is_better: bool = True
    source_trial_id: int | None = Field(default=None, ge=1)
    source_checkpoint_uuid: str | None = Field(default=None, pattern=r"^[0-9a-fA-F-]{1,36}$")


class _LengthSearcher(_SearcherBase):
    max_length: Length

    @field_validator("max_length", mode="before")
    @classmethod
    def _integer_form(cls, value: Any) -> Any:
        return unitless_length(value)

    @field_validator("max_length")
    @classmethod
    def _max_length_positive(cls, value: Length) -> Length:
        _positive(value)
        return value


class _OptionalLengthSearcher(_SearcherBase):
    """``single``, ``grid``, ``random``: ``max_length`` is optional, as in Determined 0.38;
    without it the training code decides how long a trial trains (a Trial class cannot, and
    such a config is refused when the experiment is created, naming ``searcher.max_length``)."""

    max_length: Length | None = None

    @field_validator("max_length", mode="before")
    @classmethod
    def _integer_form(cls, value: Any) -> Any:
        return unitless_length(value)

    @field_validator("max_length")
    @classmethod
    def _max_length_positive(cls, value: Length | None) -> Length | None:
        return _positive(value)


class SingleSearcherConfig(_OptionalLengthSearcher):
    """``single``: one trial with the const/first values, trained to ``max_length`` (when
    given; else for as long as the training code trains)."""

    name: Literal["single"]


class GridSearcherConfig(_OptionalLengthSearcher):
    """``grid``: one trial per point of the hyperparameter grid (int/double/log need ``count``)."""

    name: Literal["grid"]
    max_concurrent_trials: int = Field(default=16, ge=0, le=MAX_TRIALS)


class RandomSearcherConfig(_OptionalLengthSearcher):
    """``random``: ``max_trials`` trials with independently sampled hyperparameters."""

    name: Literal["random"]
    max_trials: int = Field(ge=1, le=MAX_TRIALS)
    max_concurrent_trials: int = Field(default=16, ge=0, le=MAX_TRIALS)


TIME_METRIC_UNITS: tuple[str, ...] = LENGTH_UNITS
"""The ``time_metric`` values that are PEDL's length units (the engine counts batches and
converts records and epochs). Any other name is a validation metric that the training code
reports, whose values measure a trial's progress (Determined 0.38's meaning): only a script
entrypoint (a Core API loop) can report it; for a Trial class it is refused when an
experiment is created."""


class _HalvingSearcherConfig(_SearcherBase):
    """What ``adaptive_asha`` and ``async_halving`` share (Determined's names and defaults).

    The maximum training length is either ``max_length`` (older configs) or ``max_time``
    measured in ``time_metric`` (Determined 0.38's form, which wins when both are given, as
    in Determined): see :attr:`length`.
    """

    max_length: Length | None = None
    max_trials: int = Field(ge=1, le=MAX_TRIALS)
    divisor: float = Field(default=4.0, gt=1)
    max_concurrent_trials: int = Field(default=16, ge=0, le=MAX_TRIALS)
    stop_once: bool = False
    time_metric: str | None = None
    max_time: int | None = Field(default=None, ge=1, le=MAX_LENGTH)

    @field_validator("max_length", mode="before")
    @classmethod
    def _integer_form(cls, value: Any) -> Any:
        return unitless_length(value)

    @field_validator("max_length")
    @classmethod
    def _max_length_positive(cls, value: Length | None) -> Length | None:
        return _positive(value)

    @model_validator(mode="after")
    def _needs_a_budget(self) -> _HalvingSearcherConfig:
        if self.max_length is None and (self.time_metric is None or self.max_time is None):
            raise config_error(
                "missing required field 'max_length' (or give both time_metric and max_time)",
                at="max_length",
            )
        return self

    @property
    def reported_time_metric(self) -> str | None:
        """``time_metric`` when it names a metric the training code reports (not one of
        :data:`TIME_METRIC_UNITS`) and ``max_time`` is given, else None."""
        if self.time_metric is None or self.max_time is None:
            return None
        return None if self.time_metric in TIME_METRIC_UNITS else self.time_metric

    @property
    def length(self) -> Length | None:
        """The maximum training length of a trial: ``max_time`` in the unit ``time_metric``
        when both are given, else ``max_length``. With a :attr:`reported_time_metric` the
        searcher's lengths are values of that metric (``max_time`` counted as batches: the
        searcher only compares numbers; the script's reports say how far it got)."""
        if self.time_metric is not None and self.max_time is not None:
            unit = "batches" if self.reported_time_metric else self.time_metric
            return Length.model_validate({unit: self.max_time})
        return self.max_length


class AdaptiveASHASearcherConfig(_HalvingSearcherConfig):
    """``adaptive_asha``: brackets of asynchronous successive halving (see
    :class:`pedl.searcher.AdaptiveASHASearch`).

    ``max_length`` is required unless both ``time_metric`` and ``max_time`` are given
    (Determined's newer time-based form).
    """

    name: Literal["adaptive_asha"]
    max_rungs: int = Field(default=5, ge=1, le=64)
    mode: Literal["aggressive", "standard", "conservative"] = "standard"
    bracket_rungs: list[Annotated[int, Field(ge=1, le=MAX_TRIALS)]] = Field(default_factory=list)


class AsyncHalvingSearcherConfig(_HalvingSearcherConfig):
    """``async_halving``: one bracket of asynchronous successive halving with ``num_rungs``
    rungs (see :class:`pedl.searcher.AsyncHalvingSearch`)."""

    name: Literal["async_halving"]
    num_rungs: int = Field(ge=1, le=64)


class _BayesianSearcherConfig(_LengthSearcher):
    max_trials: int = Field(ge=1, le=MAX_TRIALS)
    max_concurrent_trials: int = Field(default=16, ge=0, le=MAX_TRIALS)
    n_startup_trials: int = Field(default=10, ge=0, le=MAX_TRIALS)
    """Trials drawn at random before the model of the metric guides the draws."""


class TPESearcherConfig(_BayesianSearcherConfig):
    """``tpe``: Bayesian search with Optuna's tree-structured Parzen estimator."""

    name: Literal["tpe"]


class GPSearcherConfig(_BayesianSearcherConfig):
    """``gp``: Bayesian search with Optuna's Gaussian-process sampler."""

    name: Literal["gp"]


class CustomSearcherConfig(_SearcherBase):
    """``custom``: a user-written :class:`pedl.searcher.SearchMethod` decides, in a process
    of its own; ``max_length`` is optional.

    ``search_method``: ``"module:Class"`` in the model definition (``Class`` alone: in the
    entrypoint's module); by default the one ``SearchMethod`` subclass that the entrypoint's
    module defines.
    """

    name: Literal["custom"]
    unit: Literal["batches", "records", "epochs"] | None = None
    max_length: Length | None = None
    search_method: str | None = Field(default=None, min_length=1, max_length=500)

    @field_validator("max_length")
    @classmethod
    def _max_length_positive(cls, value: Length | None) -> Length | None:
        return _positive(value)


SearcherConfig = Annotated[
    Annotated[SingleSearcherConfig, Tag("searcher:single")]
    | Annotated[GridSearcherConfig, Tag("searcher:grid")]
    | Annotated[RandomSearcherConfig, Tag("searcher:random")]
    | Annotated[AdaptiveASHASearcherConfig, Tag("searcher:adaptive_asha")]
    | Annotated[AsyncHalvingSearcherConfig, Tag("searcher:async_halving")]
    | Annotated[TPESearcherConfig, Tag("searcher:tpe")]
    | Annotated[GPSearcherConfig, Tag("searcher:gp")]
    | Annotated[CustomSearcherConfig, Tag("searcher:custom")],
    Discriminator(tag_of("searcher", "name")),
]
"""The ``searcher`` section, discriminated by ``name``."""
