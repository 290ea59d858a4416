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
    "nsga2",
    "gp",
    "pbt",
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


MULTI_OBJECTIVE_SEARCHERS: tuple[str, ...] = ("grid", "random", "adaptive_asha", "tpe", "nsga2")
"""The searchers that take several objectives in ``searcher.metrics``."""

MAX_OBJECTIVES = 8
"""The most objectives ``searcher.metrics`` may list."""


class SearcherObjective(ConfigModel):
    """One objective of ``searcher.metrics``: a validation metric and its direction."""

    name: str = Field(min_length=1, max_length=MAX_METRIC_NAME)
    smaller_is_better: bool = True


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
    metrics: list[SearcherObjective] | None = Field(
        default=None, min_length=1, max_length=MAX_OBJECTIVES
    )
    """Multi-objective search: the objectives, each a validation metric with its direction
    (``grid``, ``random``, ``adaptive_asha``, ``tpe`` and ``nsga2``). ``metric`` and
    ``smaller_is_better`` are then the first one's (they may be left out)."""
    source_trial_id: int | None = Field(default=None, ge=1)
    source_checkpoint_uuid: str | None = Field(default=None, pattern=r"^[0-9a-fA-F-]{1,36}$")

    @model_validator(mode="before")
    @classmethod
    def _metric_from_metrics(cls, data: Any) -> Any:
        """``metrics`` without ``metric``: the first objective is the searcher metric."""
        if not isinstance(data, dict):
            return data
        objectives = data.get("metrics")
        if isinstance(objectives, list) and objectives and isinstance(objectives[0], dict):
            first = objectives[0]
            data = dict(data)
            if data.get("metric") is None and isinstance(first.get("name"), str):
                data["metric"] = first["name"]
            if data.get("smaller_is_better") is None and "smaller_is_better" in first:
                data["smaller_is_better"] = first["smaller_is_better"]
        return data

    @model_validator(mode="after")
    def _objectives_agree(self) -> _SearcherBase:
        if self.metrics is None:
            return self
        names = [o.name for o in self.metrics]
        repeated = sorted({n for n in names if names.count(n) > 1})
        if repeated:
            raise config_error(f"lists {', '.join(repeated)} more than once", at="metrics")
        first = self.metrics[0]
        if (self.metric, self.smaller_is_better) != (first.name, first.smaller_is_better):
            raise config_error(
                f"metric {self.metric!r} (smaller_is_better: {self.smaller_is_better}) is not "
                f"the first of searcher.metrics ({first.name!r}, smaller_is_better: "
                f"{first.smaller_is_better}); leave metric and smaller_is_better out, or make "
                "them the first objective's",
                at="metric",
            )
        name = getattr(self, "name", "")
        if len(self.metrics) > 1 and name not in MULTI_OBJECTIVE_SEARCHERS:
            raise config_error(
                f"the {name} searcher optimises one metric; several objectives are searched "
                f"by {', '.join(MULTI_OBJECTIVE_SEARCHERS)} (or give one metric)",
                at="metrics",
            )
        return self

    @property
    def objectives(self) -> list[SearcherObjective]:
        """The objectives: ``metrics``, or the one ``metric`` with ``smaller_is_better``."""
        if self.metrics is not None:
            return list(self.metrics)
        return [SearcherObjective(name=self.metric, smaller_is_better=self.smaller_is_better)]

    @property
    def multi_objective(self) -> bool:
        """Whether the search has several objectives (``metrics`` lists more than one)."""
        return self.metrics is not None and len(self.metrics) > 1


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


class NSGA2SearcherConfig(_BayesianSearcherConfig):
    """``nsga2``: multi-objective search with Optuna's NSGA-II sampler (a genetic algorithm
    over generations of ``population_size`` trials; ``n_startup_trials`` is not used)."""

    name: Literal["nsga2"]
    population_size: int = Field(default=50, ge=2, le=MAX_TRIALS)


class GPSearcherConfig(_BayesianSearcherConfig):
    """``gp``: Bayesian search with Optuna's Gaussian-process sampler."""

    name: Literal["gp"]


class PBTReplaceFunction(ConfigModel):
    """``pbt``'s ``replace_function``: each round the worst ``truncate_fraction`` of the
    population is closed and as many copies of the best take their places."""

    truncate_fraction: float = Field(ge=0, le=0.5)


class PBTExploreFunction(ConfigModel):
    """``pbt``'s ``explore_function``: a copy's hyperparameter is drawn afresh with
    probability ``resample_probability``, else multiplied by ``1 - perturb_factor`` or
    ``1 + perturb_factor`` (even odds; numbers only, clamped to the range)."""

    resample_probability: float = Field(ge=0, le=1)
    perturb_factor: float = Field(ge=0, le=1)


class PBTSearcherConfig(_SearcherBase):
    """``pbt``: population-based training (Determined's ``pbt``; see
    :class:`pedl.searcher.PBTSearch`): ``population_size`` trials train
    ``length_per_round`` per round for ``num_rounds`` rounds; after each round but the last
    the worst ``replace_function.truncate_fraction`` are replaced by copies of the best,
    warm-started from their checkpoints with explored hyperparameters."""

    name: Literal["pbt"]
    population_size: int = Field(ge=1, le=MAX_TRIALS)
    num_rounds: int = Field(ge=1, le=MAX_TRIALS)
    length_per_round: Length
    replace_function: PBTReplaceFunction
    explore_function: PBTExploreFunction

    @field_validator("length_per_round", mode="before")
    @classmethod
    def _integer_form(cls, value: Any) -> Any:
        return unitless_length(value)

    @field_validator("length_per_round")
    @classmethod
    def _length_positive(cls, value: Length) -> Length:
        _positive(value)
        return value

    @model_validator(mode="after")
    def _total_fits(self) -> PBTSearcherConfig:
        total = self.length_per_round.value * self.num_rounds
        if total > MAX_LENGTH:
            raise config_error(
                f"num_rounds * length_per_round is {total:,}, more than the longest length "
                f"{MAX_LENGTH:,}",
                at="length_per_round",
            )
        return self

    @property
    def max_length(self) -> Length:
        """The longest any trial trains: ``num_rounds * length_per_round`` (a trial of the
        first population that survives every round)."""
        length = self.length_per_round
        return Length.model_validate({length.unit: length.value * self.num_rounds})


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
    | Annotated[NSGA2SearcherConfig, Tag("searcher:nsga2")]
    | Annotated[GPSearcherConfig, Tag("searcher:gp")]
    | Annotated[PBTSearcherConfig, Tag("searcher:pbt")]
    | Annotated[CustomSearcherConfig, Tag("searcher:custom")],
    Discriminator(tag_of("searcher", "name")),
]
"""The ``searcher`` section, discriminated by ``name``."""
