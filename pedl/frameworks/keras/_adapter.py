"""Running a PEDL 0.x ``TFKerasTrial(hparams)`` on the TFKerasTrial controller."""

from __future__ import annotations

import contextvars
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import tensorflow as tf

from pedl import core, model_def
from pedl.callback import Callback as LegacyCallback
from pedl.keras import TFKerasTrial, TFKerasTrialContext, TFKerasTrialController, TrialError
from pedl.keras._keras import keras
from pedl.keras.callbacks import Callback

if TYPE_CHECKING:
    from pedl.frameworks.keras.tf_keras_trial import TFKerasTrial as LegacyTFKerasTrial

_CONTEXT: contextvars.ContextVar[TFKerasTrialContext | None] = contextvars.ContextVar(
    "pedl_legacy_keras_context", default=None
)


def wrap_dataset(dataset: Any) -> Any:
    """Wrap a ``tf.data.Dataset`` created in ``make_data_loaders`` (PEDL 0.x API)."""
    context = _CONTEXT.get()
    if context is None:
        if not isinstance(dataset, tf.data.Dataset):
            raise TypeError(f"wrap_dataset expects a tf.data.Dataset, got {type(dataset).__name__}")
        return dataset  # outside a trial (e.g. the user's own tests): nothing to register
    return context.wrap_dataset(dataset)


class _StepCallbacks(Callback):
    """Calls PEDL 0.x callbacks from the chunk and validation hooks.

    A step is one chunk of training; ``step_id`` counts them from 1 over the whole trial
    (saved in checkpoints). ``on_train_step_end`` gets one dict per batch of the step, each
    with that batch's own metrics (the controller resets the metrics before every batch; see
    :meth:`LegacyTFKerasTrialController.wants_per_batch_metrics`).
    """

    def __init__(self, callbacks: list[LegacyCallback]) -> None:
        super().__init__()
        self._callbacks = callbacks
        self._started = False
        self._step = 0
        self._batches: list[dict[str, Any]] = []

    def get_state(self) -> Any:
        return {"started": self._started, "step": self._step}

    def load_state(self, state: Any) -> None:
        self._started = state["started"]
        self._step = state.get("step", 0)

    def on_train_workload_begin(
        self, total_batches_trained: int, batches_requested: int | None, logs: dict[str, Any]
    ) -> None:
        if not self._started:
            self._started = True
            for cb in self._callbacks:
                cb.on_trial_begin()
        self._step += 1
        self._batches = []
        for cb in self._callbacks:
            cb.on_train_step_begin(self._step)

    def on_train_batch_end(self, batch: int, logs: dict[str, Any] | None = None) -> None:
        self._batches.append({k: float(v) for k, v in (logs or {}).items()})

    def on_train_workload_end(self, total_batches_trained: int, logs: dict[str, Any]) -> None:
        for cb in self._callbacks:
            cb.on_train_step_end(self._step, [dict(b) for b in self._batches])

    def on_test_begin(self, logs: dict[str, Any] | None = None) -> None:
        for cb in self._callbacks:
            cb.on_validation_step_begin(self._step)

    def on_test_end(self, logs: dict[str, Any] | None = None) -> None:
        metrics = {f"val_{k}": float(v) for k, v in (logs or {}).items()}
        for cb in self._callbacks:
            cb.on_validation_step_end(self._step, dict(metrics))


class _AdaptedTrial(TFKerasTrial):
    def __init__(
        self,
        context: TFKerasTrialContext,
        legacy: LegacyTFKerasTrial,
        make_data_loaders: Callable[[dict[str, Any], dict[str, Any]], Any],
    ) -> None:
        super().__init__(context)
        self._legacy = legacy
        self._make_data_loaders = make_data_loaders
        self._loaders: tuple[Any, Any] | None = None

    def _data(self) -> tuple[Any, Any]:
        if self._loaders is None:
            token = _CONTEXT.set(self.context)
            try:
                loaders = self._make_data_loaders(
                    self.context.get_experiment_config(), self.context.get_hparams()
                )
            finally:
                _CONTEXT.reset(token)
            if not isinstance(loaders, tuple | list) or len(loaders) != 2:
                raise TrialError(
                    "make_data_loaders(experiment_config, hparams) must return a pair "
                    f"(training, validation), got {type(loaders).__name__}"
                )
            self._loaders = (loaders[0], loaders[1])
        return self._loaders

    def build_model(self) -> keras.Model:
        model = self._legacy.build_model(self.context.get_hparams())
        if isinstance(model, keras.Model):
            self.context.wrap_model(model)
        return model

    def build_training_data_loader(self) -> Any:
        return self._data()[0]

    def build_validation_data_loader(self) -> Any:
        return self._data()[1]

    def session_config(self) -> tf.compat.v1.ConfigProto:
        return self._legacy.session_config(self.context.get_hparams())

    def keras_callbacks(self) -> list[keras.callbacks.Callback]:
        hparams = self.context.get_hparams()
        callbacks = list(self._legacy.keras_callbacks(hparams))
        legacy = list(self._legacy.callbacks(hparams))
        for cb in legacy:
            set_trial_id = getattr(cb, "set_trial_id", None)
            if callable(set_trial_id):
                set_trial_id(self.context.get_trial_id())
        if legacy:
            callbacks.append(_StepCallbacks(legacy))
        return callbacks


class LegacyTFKerasTrialController(TFKerasTrialController):
    """Builds the adapter from the legacy trial class and the module's ``make_data_loaders``."""

    def wants_per_batch_metrics(self) -> bool:
        """PEDL 0.x step callbacks get each batch's own metrics."""
        return any(isinstance(cb, _StepCallbacks) for cb in self.user_callbacks)

    @classmethod
    def from_definition(
        cls, definition: model_def.ModelDefinition, context: core.Context
    ) -> TFKerasTrialController:
        trial_class = definition.trial_class
        make_data_loaders = definition.make_data_loaders
        if trial_class is None:
            raise TrialError("the model definition has no Trial class")
        if make_data_loaders is None:
            raise TrialError(
                f"{trial_class.__qualname__} is a PEDL 0.x TFKerasTrial: the model definition must "
                "also define make_data_loaders(experiment_config, hparams) returning the training "
                "and validation data"
            )

        def factory(ctx: TFKerasTrialContext) -> TFKerasTrial:
            legacy = trial_class(ctx.get_hparams())
            return _AdaptedTrial(ctx, legacy, make_data_loaders)  # type: ignore[arg-type]

        return cls(factory, context)
