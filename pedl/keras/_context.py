"""What a TFKerasTrial sees of its trial: hyperparameters, config, wrappers, fit options."""

from __future__ import annotations

import copy
import logging
from dataclasses import dataclass, field
from typing import Any

import tensorflow as tf

from pedl import core
from pedl._trial_context import TrialContext
from pedl.keras._dataset_cache import CacheableDecorator
from pedl.keras._env import EnvContext, ExperimentConfigDict
from pedl.keras._keras import OPTIMIZER_TYPES, keras, other_keras
from pedl.keras._lineage import dataset_lineage

logger = logging.getLogger("pedl.keras")

_FIT_OPTIONS = (
    "verbose",
    "class_weight",
    "workers",
    "use_multiprocessing",
    "max_queue_size",
    "shuffle",
    "validation_steps",
)


class _ArgNotProvided:
    def __repr__(self) -> str:
        return "<not provided>"


NOT_PROVIDED: Any = _ArgNotProvided()


@dataclass(frozen=True)
class FitConfig:
    """The model.fit options a trial set through ``configure_fit`` (defaults otherwise)."""

    verbose: bool = False
    class_weight: Any = None
    workers: int = 1
    use_multiprocessing: bool = False
    max_queue_size: int = 10
    shuffle: bool = True
    validation_steps: int | None = None


class TFKerasExperimentalContext:
    """Experimental features of the tf.keras API, reached as ``context.experimental``.

    ``cache_train_dataset`` and ``cache_validation_dataset`` are Determined's dataset-caching
    decorators (see :mod:`pedl.keras._dataset_cache` for how PEDL keeps the cache).
    """

    def __init__(self, trial_seed: int, wrap: Any) -> None:
        self._train = CacheableDecorator(training=True, seed=trial_seed, wrap=wrap)
        self._validation = CacheableDecorator(training=False, seed=trial_seed, wrap=wrap)

    def cache_train_dataset(
        self,
        dataset_id: str,
        dataset_version: str,
        shuffle: bool = False,
        skip_shuffle_at_epoch_end: bool = False,
    ) -> Any:
        """Decorate a function that returns a ``tf.data.Dataset`` (unbatched) for training.

        The dataset is built once per ``(dataset_id, dataset_version)`` in the trial process,
        shuffled with the trial seed when ``shuffle`` (again each pass unless
        ``skip_shuffle_at_epoch_end``) and wrapped as by ``context.wrap_dataset``. Batch and
        augment the returned dataset yourself; do not ``repeat()`` it.
        """
        return self._train.cache_dataset(
            dataset_id, dataset_version, shuffle, skip_shuffle_at_epoch_end
        )

    def cache_validation_dataset(
        self, dataset_id: str, dataset_version: str, shuffle: bool = False
    ) -> Any:
        """As :meth:`cache_train_dataset`, for the validation data (shuffled at most once)."""
        return self._validation.cache_dataset(
            dataset_id, dataset_version, shuffle, skip_shuffle_at_epoch_end=True
        )


@dataclass
class _Wrapped:
    models: list[Any] = field(default_factory=list)
    optimizers: list[Any] = field(default_factory=list)
    dataset_ids: set[int] = field(default_factory=set)
    datasets: list[Any] = field(default_factory=list)


class TFKerasTrialContext(TrialContext):
    """Runtime information and wrappers for a ``TFKerasTrial``.

    Built by PEDL and passed to the trial's ``__init__``. ``context.distributed`` is the
    trial's :class:`pedl.core.DistributedContext`; ``context.experimental`` holds experimental
    features.
    """

    def __init__(self, core_context: core.Context) -> None:
        super().__init__(core_context)
        self.experimental = TFKerasExperimentalContext(self._info.trial_seed, self.wrap_dataset)
        self._env: EnvContext | None = None
        self._fit_options: dict[str, Any] = {}
        self._wrapped = _Wrapped()

    # Trial information -------------------------------------------------------------------

    @property
    def env(self) -> EnvContext:
        """The trial's environment under Determined's names (``env.experiment_config``,
        ``env.hparams``, ``env.trial_seed``, ...): see :class:`pedl.keras.EnvContext`."""
        if self._env is None:
            self._env = EnvContext(self._info, self.distributed)
        return self._env

    def get_experiment_config(self) -> dict[str, Any]:
        """The experiment configuration, with defaults filled in, as a plain dict (with
        Determined's accessors, e.g. ``slots_per_trial()``)."""
        return ExperimentConfigDict(copy.deepcopy(dict(self.env.experiment_config)))

    # Wrappers ----------------------------------------------------------------------------

    def wrap_model(self, model: Any) -> Any:
        """Register a ``keras.Model``; call it right after creating the model, before compile."""
        if not isinstance(model, keras.Model):
            why = other_keras(model)
            raise TypeError(
                f"wrap_model expects a keras.Model, got {type(model).__name__}"
                + (f": {why}" if why else "")
            )
        self._wrapped.models.append(model)
        return model

    def wrap_optimizer(self, optimizer: Any) -> Any:
        """Register a ``keras.optimizers.Optimizer``; use the returned object."""
        if not isinstance(optimizer, OPTIMIZER_TYPES):
            why = other_keras(optimizer)
            raise TypeError(
                f"wrap_optimizer expects a keras optimizer, got {type(optimizer).__name__}"
                + (f": {why}" if why else "")
            )
        self._wrapped.optimizers.append(optimizer)
        return optimizer

    def wrap_dataset(self, dataset: Any, shard_dataset: bool = True) -> Any:
        """Register a ``tf.data.Dataset``; call it right after creating the dataset.

        Transform the returned dataset as you like (``shuffle``, ``batch``, ``map``,
        ``repeat``, ...): every dataset derived from a wrapped one counts as wrapped. With
        several slots and ``shard_dataset=True`` each worker keeps every ``size``-th element
        starting at its rank, so the workers see disjoint data. With ``shard_dataset=False``
        the user shards the data themselves.
        """
        if not isinstance(dataset, tf.data.Dataset):
            raise TypeError(f"wrap_dataset expects a tf.data.Dataset, got {type(dataset).__name__}")
        if shard_dataset and self.distributed.get_size() > 1:
            dataset = dataset.shard(self.distributed.get_size(), self.distributed.get_rank())
        self._wrapped.dataset_ids.add(id(dataset))
        self._wrapped.datasets.append(dataset)  # keeps the id valid
        return dataset

    def is_wrapped_dataset(self, dataset: Any) -> bool:
        """Whether ``dataset`` was returned by :meth:`wrap_dataset` or derives from one."""
        ids = self._wrapped.dataset_ids
        return any(id(d) in ids for d in dataset_lineage(dataset))

    @property
    def dataset_initialized(self) -> bool:
        """Whether :meth:`wrap_dataset` was called (Determined's flag of the same name)."""
        return bool(self._wrapped.dataset_ids)

    def accepts_dataset(self, dataset: Any) -> bool:
        """Whether a data loader may return ``dataset``: it derives from a wrapped dataset or,
        as in Determined, ``wrap_dataset`` was called at all (a dataset that does not derive
        from a wrapped one is then not sharded across slots: each slot sees all of it)."""
        if self.is_wrapped_dataset(dataset):
            return True
        if not self.dataset_initialized:
            return False
        if self.distributed.get_size() > 1:
            logger.warning(
                "a data loader returned a tf.data.Dataset that does not derive from one passed "
                "to context.wrap_dataset(): it is not sharded, so each of the %d slots trains on "
                "all of it",
                self.distributed.get_size(),
            )
        return True

    @property
    def wrapped_models(self) -> list[Any]:
        return list(self._wrapped.models)

    # model.fit options -------------------------------------------------------------------

    def configure_fit(
        self,
        verbose: bool | None = None,
        class_weight: Any = NOT_PROVIDED,
        workers: int | None = None,
        use_multiprocessing: bool | None = None,
        max_queue_size: int | None = None,
        shuffle: bool | None = None,
        validation_steps: Any = NOT_PROVIDED,
    ) -> None:
        """Set options of ``model.fit``; see the Keras documentation for their meaning.

        Calling it again only changes the options given in that call: earlier settings of
        the others stay.
        """
        given = {
            "verbose": verbose,
            "class_weight": class_weight,
            "workers": workers,
            "use_multiprocessing": use_multiprocessing,
            "max_queue_size": max_queue_size,
            "shuffle": shuffle,
            "validation_steps": validation_steps,
        }
        for key, value in given.items():
            if value is None or value is NOT_PROVIDED:
                continue
            self._fit_options[key] = value
        if class_weight is None:
            self._fit_options["class_weight"] = None
        if validation_steps is None:
            self._fit_options["validation_steps"] = None

    @property
    def fit_config(self) -> FitConfig:
        """The options set so far through configure_fit, merged over the defaults."""
        options = {k: v for k, v in self._fit_options.items() if k in _FIT_OPTIONS}
        return FitConfig(**options)


TFKerasContext = TFKerasTrialContext
"""Determined's early name (2020) of the tf.keras context."""
