"""Drives a TFKerasTrial: one long ``model.fit`` per process, steered at chunk boundaries.

The controller builds the trial's model and data, restores the latest checkpoint, and calls
``model.fit`` once on an endless, positioned stream of batches. A single platform callback
(:class:`_PlatformCallback`) counts batches; at each chunk boundary it reports training
metrics, validates, checkpoints, completes searcher operations, asks ``preempt``, and stops
``fit`` when the process should stop. The user's Keras callbacks are not given to Keras:
the platform callback calls them itself, so that across chunks, validations and resumes
they see one long ``fit()`` (see :class:`pedl.keras.callbacks.Callback`).

With several workers (the core context's ``distributed`` of size > 1) the controller runs
its own loop of the compiled model's ``train_step`` on this worker's share of each global
batch, with the same platform callback events, in one of two ways:

- every worker on this machine (Keras 3, Linux; :func:`pedl.keras._host_allreduce.usable`):
  no strategy; each worker trains its own copy of the model, which starts from the chief's
  weights, and its optimizer applies the average of every worker's gradients, taken through
  shared memory (:mod:`pedl.keras._host_allreduce`, Horovod's ``DistributedOptimizer``'s
  way), at a fraction of the strategy's collective's cost;
- else (workers on several machines, Keras 2 mode, a script's ``fit``, or
  ``PEDL_HOST_ALLREDUCE=0``) each worker builds the model under a
  ``MultiWorkerMirroredStrategy`` (:mod:`pedl.keras._strategy`) and, since Keras 3's ``fit``
  fails under it, the loop runs ``strategy.run`` of ``train_step``.

PEDL adds no collective to a step beyond the gradients': each worker keeps its own step's
logs, averaged over the workers (one packed collective) only where they are read, at chunk
boundaries, or after every step when the user's callbacks or per-batch metrics read them.
Validation runs ``test_step`` on this worker's share of the validation data and reads the
metrics summed over all workers (Keras keeps metric state in sum-on-read variables, so each
record counts once). The chief takes every decision and writes the checkpoint; every worker
restores it.
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import json
import logging
import os
import pickle
import tempfile
from collections.abc import Callable, Iterator, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import numpy as np
import tensorflow as tf

from pedl import core, model_def
from pedl._checkpoint_metadata import checkpoint_metadata, read_checkpoint_metadata
from pedl._chunk_loop import ChunkLoop
from pedl._keras2_hint import positional_metrics
from pedl._trial import TrialOutcome
from pedl._trial_error import TrialError
from pedl.config import Length
from pedl.keras import _host_allreduce, _keras, _state
from pedl.keras._build import build_variables
from pedl.keras._context import TFKerasTrialContext
from pedl.keras._data import (
    DatasetData,
    empty_batch,
    make_training_data,
    make_validation_input,
)
from pedl.keras._host_allreduce import HostAllReduce, average_before_applying
from pedl.keras._keras import keras
from pedl.keras._shuffle_check import warn_if_inexact_at_pass_ends, warn_if_unreproducible
from pedl.keras._strategy import current_strategy, multi_worker_strategy, one_thread_where_one_core
from pedl.keras.callbacks import Callback, TensorBoard

if TYPE_CHECKING:
    from pedl.keras._trial import TFKerasTrial

logger = logging.getLogger("pedl.keras")

CHECKPOINT_FORMAT = "pedl.keras/1"
FRAMEWORK = "tensorflow-keras"
_STATE_DIR = "state"
_TRIAL_STATE = "trial_state.json"
_CALLBACK_STATE = "callbacks.pkl"
_ENDLESS = 2**62
_LOGS_CAPACITY = 4096
"""The host all-reduce's capacity at least (float32 values): a step's logs fit beside a
small model's gradients."""


@dataclass
class _Progress:
    """The counters a checkpoint carries so that a resumed run continues the same schedule."""

    batches: int = 0
    last_validation: int = -1
    last_checkpoint: int = -1
    chunk_start: int = 0
    best_metric: float | None = None
    last_searcher_metric: float | None = None


def seed_everything(seed: int) -> None:
    """Seed Python, NumPy, TensorFlow (its global generator too) and Keras from the trial seed."""
    _keras.set_random_seed(seed)
    tf.random.set_global_generator(tf.random.Generator.from_seed(seed))


def configure_determinism() -> None:
    """Turn on TensorFlow's op determinism unless ``PEDL_OP_DETERMINISM=0``."""
    if os.environ.get("PEDL_OP_DETERMINISM", "1") != "0":
        tf.config.experimental.enable_op_determinism()


def apply_session_config(config: tf.compat.v1.ConfigProto) -> None:
    """Honour a TF1 ConfigProto through the TF2 configuration APIs."""
    try:
        if config.intra_op_parallelism_threads:
            tf.config.threading.set_intra_op_parallelism_threads(
                config.intra_op_parallelism_threads
            )
        if config.inter_op_parallelism_threads:
            tf.config.threading.set_inter_op_parallelism_threads(
                config.inter_op_parallelism_threads
            )
    except RuntimeError as e:
        logger.warning("session_config threads not applied (TensorFlow already started): %s", e)
    tf.config.set_soft_device_placement(config.allow_soft_placement)
    if config.gpu_options.allow_growth:
        for gpu in tf.config.list_physical_devices("GPU"):
            try:
                tf.config.experimental.set_memory_growth(gpu, True)
            except RuntimeError as e:
                logger.warning("memory growth not applied to %s: %s", gpu.name, e)


class TFKerasTrialController:
    """Runs one TFKerasTrial in this process (see the module docstring)."""

    def __init__(
        self, trial_factory: Callable[[TFKerasTrialContext], TFKerasTrial], context: core.Context
    ) -> None:
        self.progressed = False
        """True once a training batch completed in this run (see pedl.TrialController)."""
        self._core = context
        self._info = context.info
        self._config = context.info.config
        self._dist = context.distributed
        self._on_host = (
            not _keras.LEGACY
            and _host_allreduce.usable(self._dist)
            and current_strategy() is None  # a script's fit on several workers: its scope
        )
        """Several workers, all on this machine: gradients averaged through shared memory,
        no strategy (see the module docstring)."""
        if self._on_host:
            one_thread_where_one_core(self._dist)
        self.strategy = (
            multi_worker_strategy(self._dist) if self._dist.size > 1 and not self._on_host else None
        )
        """The multi-worker strategy, made before any other TensorFlow op; None on one
        worker, and where the workers average through this machine's memory."""
        self._allreduce: HostAllReduce | None = None
        # Same layer names, hence variable paths, every run. No gc.collect(): with TensorFlow
        # loaded it takes ~0.2 s of the time to the first batch. Not inside a strategy's
        # scope (a script's fit on several workers): that would drop the scope.
        if not tf.distribute.has_strategy():
            _keras.clear_session()
        _keras.announce_mode()
        seed_everything(self._info.trial_seed)
        configure_determinism()
        self.context = TFKerasTrialContext(context)
        with self._scope():
            self.trial = trial_factory(self.context)
            apply_session_config(self.trial.session_config())
            self.model = self._build_model()
        fit = self.context.fit_config
        self._fit_config = fit
        rank, size = self._dist.rank, self._dist.size
        self.train_data = make_training_data(
            self.trial.build_training_data_loader(),
            is_wrapped_dataset=self.context.accepts_dataset,
            batch_size=(
                self.context.get_global_batch_size
                if size > 1
                else self.context.get_per_slot_batch_size
            ),
            shuffle=fit.shuffle,
            seed=self._info.trial_seed,
            fit_workers=fit.workers,
            fit_use_multiprocessing=fit.use_multiprocessing,
            fit_max_queue_size=fit.max_queue_size,
            **({"rank": rank, "size": size} if size > 1 else {}),
        )
        if isinstance(self.train_data, DatasetData):
            warn_if_unreproducible(self.train_data.dataset, self._info.code_dir)
            warn_if_inexact_at_pass_ends(self.train_data.dataset)
        self.validation_input = make_validation_input(
            self.trial.build_validation_data_loader(),
            is_wrapped_dataset=self.context.accepts_dataset,
            batch_size=self.context.get_per_slot_batch_size,
            **({"rank": rank, "size": size} if size > 1 else {}),
        )
        self.user_callbacks = list(self.trial.keras_callbacks())
        self._pedl_callbacks = [cb for cb in self.user_callbacks if isinstance(cb, Callback)]
        self._callback_states: list[Any] = []
        """The PEDL callbacks' states from the checkpoint resumed, loaded once they began."""
        tensorboard_dir = self._info.extra.get("tensorboard_dir") or (
            Path(tempfile.gettempdir()) / "pedl-tensorboard" / f"trial_{self._info.trial_id}"
        )
        for cb in self.user_callbacks:
            if isinstance(cb, TensorBoard):
                cb.set_pedl_log_dir(str(tensorboard_dir))
        self.batches_per_epoch = self._batches_per_epoch()
        self.callbacks = keras.callbacks.CallbackList(
            self.user_callbacks, add_history=False, add_progbar=False
        )
        self.per_batch_metrics = self.wants_per_batch_metrics()
        """When True, metrics are reset before every batch, so that the logs of
        ``on_train_batch_end`` hold that batch's own metrics, and a chunk's training metrics
        are the mean of its batches' (PEDL 0.x's step callbacks see one dict per batch)."""
        self._batch_metrics: list[dict[str, float]] = []
        self._loop = ChunkLoop(
            context,
            _Progress(),
            self._to_batches,
            validate=self._validate,
            checkpoint=self._checkpoint,
            stop_requested=self.stop_requested,
            on_stop=self._stop_fit,
            logger=logger,
        )
        self._test_step: Any = None
        self._reset_function: Any = None

    @classmethod
    def from_definition(
        cls, definition: model_def.ModelDefinition, context: core.Context
    ) -> TFKerasTrialController:
        trial_class = definition.trial_class
        if trial_class is None:
            raise TrialError("the model definition has no Trial class")
        return cls(cast("Callable[[TFKerasTrialContext], TFKerasTrial]", trial_class), context)

    @property
    def progress(self) -> _Progress:
        """The counters (batches trained, the latest validation and checkpoint, ...)."""
        return self._loop.progress

    # Set-up ------------------------------------------------------------------------------

    def _scope(self) -> contextlib.AbstractContextManager[Any]:
        """The strategy's scope on several workers, else nothing."""
        return self.strategy.scope() if self.strategy is not None else contextlib.nullcontext()

    def wants_per_batch_metrics(self) -> bool:
        """Whether each batch's own metrics are needed (see ``per_batch_metrics``); the
        controller of the PEDL 0.x form says so when the trial has step callbacks."""
        return False

    def _build_model(self) -> keras.Model:
        model = self.trial.build_model()
        if not isinstance(model, keras.Model):
            why = _keras.other_keras(model)
            raise TrialError(
                f"build_model() returned {type(model).__name__}, expected a keras.Model"
                + (f": {why}" if why else "")
            )
        if not _keras.is_compiled(model):
            raise TrialError(
                "build_model() returned a model that was not compiled: call "
                "model.compile(optimizer=..., loss=..., metrics=...) before returning it"
            )
        if not _keras.LEGACY:
            compiled_loss = getattr(model, "_compile_loss", None)
            hint = positional_metrics(getattr(compiled_loss, "_user_loss_weights", None))
            if hint is not None:
                raise TrialError(hint)
        if self.context.wrapped_models and model not in self.context.wrapped_models:
            logger.warning("build_model() returned a model that was not passed to wrap_model()")
        return model

    def _batches_per_epoch(self) -> int | None:
        records_per_epoch = self._config.records_per_epoch
        if records_per_epoch > 0:
            return Length(unit="epochs", value=1).to_batches(
                self.context.get_global_batch_size(), records_per_epoch
            )
        return self.train_data.batches_per_pass

    def _to_batches(self, length: Length) -> int:
        return self.context.length_to_batches(length)

    # Running -----------------------------------------------------------------------------

    def run(self) -> TrialOutcome:
        """Train until the searcher closes the trial, a preemption, or the model stops."""
        with self._scope():
            build_variables(self.model, self.train_data.first_batch())
        self.callbacks.set_model(self.model)
        self.callbacks.set_params({"verbose": 0, "epochs": None, "steps": self.batches_per_epoch})
        if self._info.latest_checkpoint:
            self._restore(self._info.latest_checkpoint)
        elif self._info.warm_start_checkpoint:
            self._warm_start(self._info.warm_start_checkpoint)
        if self._on_host:
            self._start_host_allreduce()
        self._loop.start()
        # A resumed trial's callbacks begin, then get their checkpointed state (Determined's
        # order: on_train_begin may reset what load_state then restores).
        self.callbacks.on_train_begin()
        if self._callback_states:
            for cb, cb_state in zip(self._pedl_callbacks, self._callback_states, strict=True):
                cb.load_state(cb_state)
        try:
            if self._loop.begin():
                if self._dist.size > 1:
                    self._train_on_workers()
                else:
                    self.model.fit(
                        x=self.train_data.fit_input(self.progress.batches),
                        epochs=1,
                        steps_per_epoch=_ENDLESS,
                        verbose=0,
                        shuffle=False,
                        class_weight=self._fit_config.class_weight,
                        callbacks=[_PlatformCallback(self)],
                    )
        finally:
            self.train_data.close()
            self.callbacks.on_train_end()
        return self._loop.result()

    def _start_host_allreduce(self) -> None:
        """Every worker starts from the chief's state, and its optimizer averages the
        gradients over the workers (:mod:`pedl.keras._host_allreduce`)."""
        model = self.model
        variables = _state.model_variables(model)
        digest = hashlib.blake2b(digest_size=16)
        for v in variables:
            digest.update(np.ascontiguousarray(v.numpy()).tobytes())
        if len(set(self._dist.allgather(digest.hexdigest()))) > 1:
            # Built from the same seed, the copies agree unless the trial's code draws
            # numbers of its own: the chief's state then, as the strategy would have it.
            chief = self._dist.broadcast(
                [v.numpy() for v in variables] if self._dist.is_chief else None
            )
            for v, value in zip(variables, chief, strict=True):
                v.assign(value)
        # A batch normalization's moving statistics: each worker's own batch moves them.
        states = [v for v in model.non_trainable_variables if tf.as_dtype(v.dtype).is_floating]
        capacity = sum(int(np.prod(v.shape)) for v in [*model.trainable_variables, *states])
        self._allreduce = HostAllReduce(self._dist, max(capacity, _LOGS_CAPACITY))
        average_before_applying(model.optimizer, self._allreduce, states)
        logger.info(
            "worker %d of %d: gradients averaged through this machine's shared memory",
            self._dist.rank,
            self._dist.size,
        )

    def _train_on_workers(self) -> None:
        """``fit`` on several workers: this worker's batches through the model's
        ``train_step`` (in ``strategy.run`` where there is a strategy), with the platform
        callback's batch events around each."""
        strategy = self.strategy
        model = self.model
        if self._fit_config.class_weight is not None:
            raise TrialError(
                "class_weight is not supported on several workers (slots_per_trial > 1): "
                "weigh the samples in the data (sample_weights) instead"
            )

        batches = self.train_data.worker_batches(self.progress.batches)
        first = next(batches)
        batches = itertools.chain([first], batches)

        # Traced once, for any batch size (the short batch of a pass would trace it again:
        # seconds, in the middle of training). It returns this worker's own logs: no
        # collective beyond the gradients' in a step.
        reduce_logs: Callable[[Any], dict[str, float]]
        if strategy is None:
            assert self._allreduce is not None
            train_step = tf.function(model.train_step, input_signature=[_batch_spec(first)])
            reduce_logs = _HostLogsReducer(self._allreduce)
        else:

            @tf.function(input_signature=[_batch_spec(first)])
            def train_step(batch: Any) -> Any:
                return strategy.run(model.train_step, args=(batch,))

            reduce_logs = _LogsReducer(strategy)
        # Only the user's callbacks and per-batch metrics read every step's logs; otherwise
        # they are read at chunk boundaries only, where every worker reads them.
        every_step = self.per_batch_metrics or bool(self.user_callbacks)
        callback = _PlatformCallback(self)
        callback.set_model(model)
        model.stop_training = False
        self.reset_metrics()
        while not model.stop_training:
            callback.on_train_batch_begin(0)
            own = train_step(next(batches))
            logs = reduce_logs(own) if every_step else _BoundaryLogs(own, reduce_logs)
            callback.on_train_batch_end(0, logs)

    def reset_metrics(self) -> None:
        """``model.reset_metrics()``; on several workers as one TensorFlow function (its
        sum-on-read variables' eager assignments cost ~0.1 s per reset)."""
        if self.strategy is None:
            self.model.reset_metrics()
            return
        if self._reset_function is None:
            self._reset_function = tf.function(self.model.reset_metrics)
        self._reset_function()

    def stop_requested(self) -> bool:
        """Whether the trial's code asked to stop: ``model.stop_training`` (a Keras callback)
        or ``context.set_stop_requested(True)``."""
        requested = bool(getattr(self.model, "stop_training", False)) or (
            self.context.get_stop_requested()
        )
        if self._dist.size > 1:  # the chief's wish, so that all stop at the same batch
            return bool(self._dist.broadcast(requested if self._dist.is_chief else None))
        return requested

    def _stop_fit(self) -> None:
        """The trial ends: ``fit`` (or the loop on several workers) stops."""
        self.model.stop_training = True

    def on_chunk_begin(self) -> None:
        for cb in self._pedl_callbacks:
            cb.on_train_workload_begin(
                self.progress.batches, self._loop.next_boundary - self.progress.batches, {}
            )

    def on_chunk_end(self, logs: dict[str, Any]) -> bool:
        """At a boundary inside fit: report, validate, checkpoint; False stops training."""
        p = self.progress
        if self.per_batch_metrics and self._batch_metrics:
            metrics = _mean_of(self._batch_metrics)
            self._batch_metrics = []
        else:
            metrics = {k: float(v) for k, v in logs.items()}
        self._core.train.report_training_metrics(p.batches, metrics)
        for cb in self._pedl_callbacks:
            cb.on_train_workload_end(p.batches, dict(metrics))
        if self._fit_config.verbose:
            shown = " ".join(f"{k}={v:.4g}" for k, v in metrics.items())
            logger.info("trained %d-%d batches: %s", p.chunk_start, p.batches, shown)
        p.chunk_start = p.batches
        self._loop.end_chunk()
        keep_going = self._loop.advance()
        self.reset_metrics()
        return keep_going

    def record_batch_metrics(self, logs: dict[str, float]) -> None:
        """Keep one batch's own metrics, for the chunk's mean (``per_batch_metrics``)."""
        self._batch_metrics.append(logs)

    # Validation --------------------------------------------------------------------------

    def _validate(self) -> None:
        if self._dist.size > 1:
            logs = self._evaluate_on_workers()
        else:
            logs = self.model.evaluate(
                **self.validation_input,
                steps=self._fit_config.validation_steps,
                callbacks=self.callbacks,
                return_dict=True,
                verbose=0,
            )
        self._loop.record_validation({f"val_{k}": float(v) for k, v in logs.items()})

    def _evaluate_on_workers(self) -> dict[str, Any]:
        """``evaluate`` on several workers: ``test_step`` on this worker's share of the
        validation data, then the metrics read across workers (their sum-on-read state
        variables are summed over all workers on reading, so each record counts once).

        In Keras 2 mode the workers run their steps in lockstep: Keras 2's ``test_step`` reads
        its metrics' results, a collective across workers, in every step, so a worker whose
        share has fewer batches runs empty batches (which leave the metrics as they are) until
        no worker has one left, as Keras 2's own ``evaluate`` does under this strategy."""
        model = self.model
        self.reset_metrics()
        self.callbacks.on_test_begin()
        data = self.validation_input["x"]
        steps = self._fit_config.validation_steps
        batches = iter(data) if steps is None else itertools.islice(data, steps)
        last: Any = None
        empty: Any = None
        for index in itertools.count():
            batch = next(batches, None)
            if batch is None:
                if not _keras.LEGACY:
                    break
                if empty is None:
                    empty = self._empty_batch(data, last)
                if self._test_step is None:
                    self._test_step = self._make_test_step(empty)
                if not int(self._test_step(empty, False)):
                    break
                continue
            last = batch
            if self._test_step is None:
                self._test_step = self._make_test_step(batch)
            self.callbacks.on_test_batch_begin(index)
            self._test_step(batch, True)
            self.callbacks.on_test_batch_end(index)
        if self.strategy is None:
            self._sum_metric_states()
        logs: dict[str, Any] = model.get_metrics_result()
        self.callbacks.on_test_end(logs)
        return logs

    def _sum_metric_states(self) -> None:
        """Each metric state variable of this worker's model set to its value over all
        workers (what a strategy's sum-on-read variable reads: the sum, or by the variable's
        ``aggregation``, the mean or the chief's), in rank order on every worker."""
        variables = self.model.metrics_variables
        every = self._dist.allgather([np.asarray(v.numpy()) for v in variables])
        for i, v in enumerate(variables):
            values = [own[i] for own in every]
            aggregation = getattr(v, "aggregation", "sum")
            if aggregation == "sum":
                total = values[0].copy()
                for value in values[1:]:
                    total += value
            elif aggregation == "mean":
                total = np.mean(np.stack(values), axis=0).astype(values[0].dtype)
            else:  # "only_first_replica", "none"
                total = values[0]
            v.assign(total)

    @staticmethod
    def _empty_batch(data: Any, last: Any) -> Any:
        """A batch of no records like the last of this worker's validation batches, or
        like ``data``'s where it had none."""
        if last is not None:
            return tf.nest.map_structure(lambda a: a[:0], last)
        empty = empty_batch(data)
        if empty is None:
            raise TrialError(
                "this worker's share of the validation data has no batch, and the shape of "
                "an empty one is unknown (Keras 2 mode evaluates on all workers in lockstep): "
                "give the validation data at least one batch per worker"
            )
        return empty

    def _make_test_step(self, batch: Any) -> Any:
        """The TensorFlow function of one validation step on several workers, for batches
        like ``batch``; it takes whether the batch is this worker's own (not an empty one)
        and returns how many workers had one of their own."""
        strategy = self.strategy
        model = self.model
        if strategy is None:  # no lockstep (Keras 3): each worker runs its own batches
            own_step = tf.function(model.test_step, input_signature=[_batch_spec(batch)])
            return lambda batch, own: own_step(batch)

        def step(batch: Any, own: tf.Tensor) -> tf.Tensor:
            model.test_step(batch)
            return tf.cast(own, tf.int32)

        @tf.function(input_signature=[_batch_spec(batch), tf.TensorSpec([], tf.bool)])
        def test_step(batch: Any, own: tf.Tensor) -> tf.Tensor | None:
            owners = strategy.run(step, args=(batch, own))
            if not _keras.LEGACY:  # no lockstep: each worker runs its own batches only
                return None
            return strategy.reduce(tf.distribute.ReduceOp.SUM, owners, axis=None)

        return test_step

    # Checkpoints -------------------------------------------------------------------------

    def _checkpoint(self) -> None:
        """Write a checkpoint of the state at ``progress.batches`` (the chunk loop's)."""
        p = self.progress
        worker_generators = None
        if self.strategy is not None and _keras.LEGACY:
            worker_generators = self._dist.gather(_state.local_generator_states(self.model))
        if not self._dist.is_chief:
            # Every worker's state is the chief's: same weights, same data position (a
            # pure function of the global batch count); the chief writes the checkpoint,
            # with every worker's copy of Keras 2's random generators (gathered above).
            return
        metadata = checkpoint_metadata(
            self._core,
            checkpoint_format=CHECKPOINT_FORMAT,
            framework=FRAMEWORK,
            versions={
                "tensorflow_version": tf.__version__,
                "keras_version": _keras.KERAS_VERSION,
            },
            batches=p.batches,
            validation_metrics=self._loop.last_validation_metrics,
        )
        with self._core.checkpoint.store_path(metadata) as (path, _storage_id):
            state_dir = path / _STATE_DIR
            state_dir.mkdir()
            _state.save_variables(_state.model_variables(self.model), state_dir)
            _state.save_lookup_tables(self.model, state_dir)
            _state.save_rng(state_dir)
            if worker_generators is not None:
                _state.save_worker_generators(worker_generators, state_dir)
            data_state = self.train_data.save(state_dir)
            trial_state = {"progress": asdict(p), "data": data_state}
            (state_dir / _TRIAL_STATE).write_text(json.dumps(trial_state))
            with open(state_dir / _CALLBACK_STATE, "wb") as f:
                pickle.dump([cb.get_state() for cb in self._pedl_callbacks], f)
            model_def.copy_tree(self._info.code_dir, path / "code")
            for cb in self._pedl_callbacks:
                cb.on_checkpoint_end(str(path))

    def _restore(self, storage_id: str) -> None:
        with self._core.checkpoint.restore_path(storage_id) as path:
            metadata = read_checkpoint_metadata(
                path,
                storage_id,
                checkpoint_format=CHECKPOINT_FORMAT,
                what="checkpoint",
                reader="this version of PEDL",
            )
            mismatch = _keras.mode_mismatch(metadata.get("keras_version"))
            if mismatch is not None:
                raise TrialError(f"checkpoint {storage_id}: {mismatch}")
            state_dir = path / _STATE_DIR
            _state.restore_variables(_state.model_variables(self.model), state_dir)
            _state.restore_lookup_tables(self.model, state_dir)
            _state.restore_worker_generators(self.model, state_dir, self._dist.rank)
            _state.restore_rng(state_dir)
            trial_state = json.loads((state_dir / _TRIAL_STATE).read_text())
            self._loop.progress = _Progress(**trial_state["progress"])
            self.train_data.restore(state_dir, trial_state["data"])
            with open(state_dir / _CALLBACK_STATE, "rb") as f:
                callback_states = pickle.load(f)
            if len(callback_states) != len(self._pedl_callbacks):
                raise TrialError(
                    f"the checkpoint has the state of {len(callback_states)} PEDL callbacks but "
                    f"keras_callbacks() returned {len(self._pedl_callbacks)}"
                )
            # Loaded after on_train_begin (see run), as Determined does.
            self._callback_states = callback_states
            self._loop.last_validation_metrics = metadata.get("validation_metrics", {})
        logger.info("resumed from checkpoint %s at batch %d", storage_id, self.progress.batches)

    def _warm_start(self, storage_id: str) -> None:
        """Start from another trial's checkpoint: its weights only, counters from 0."""
        with self._core.checkpoint.restore_path(storage_id) as path:
            metadata = read_checkpoint_metadata(
                path,
                storage_id,
                checkpoint_format=CHECKPOINT_FORMAT,
                what="the warm-start checkpoint",
                reader="this version of PEDL",
            )
            mismatch = _keras.mode_mismatch(metadata.get("keras_version"))
            if mismatch is not None:
                raise TrialError(f"the warm-start checkpoint {storage_id}: {mismatch}")
            _state.restore_weights(self.model.weights, path / _STATE_DIR)
            _state.restore_lookup_tables(self.model, path / _STATE_DIR)
        logger.info("warm start: weights from checkpoint %s", storage_id)


class _PlatformCallback(keras.callbacks.Callback):
    """The one Keras callback PEDL gives to fit: counts batches, acts at boundaries."""

    def __init__(self, controller: TFKerasTrialController) -> None:
        super().__init__()
        self._c = controller
        self._user = controller.callbacks
        self._has_user_callbacks = bool(controller.user_callbacks)
        self._bpe = controller.batches_per_epoch
        self._epoch_open = False
        self._chunk_open = False
        self._original_train_function: Any = None

    def on_train_begin(self, logs: dict[str, Any] | None = None) -> None:
        if _keras.LEGACY:
            # Keras 2's fit counts its batches from 0 (TensorBoard's batch step): count on.
            self.model._train_counter.assign(self._c.progress.batches)
        # Capture the iterator fit created (once, on the first step), for data position.
        original = self.model.train_function
        self._original_train_function = original

        def first_step(iterator: Any) -> Any:
            self.model.train_function = original
            self._c.train_data.on_fit_iterator(iterator)
            return original(iterator)

        self.model.train_function = first_step

    def on_train_end(self, logs: dict[str, Any] | None = None) -> None:
        if self._original_train_function is not None:
            self.model.train_function = self._original_train_function

    def on_train_batch_begin(self, batch: int, logs: dict[str, Any] | None = None) -> None:
        c = self._c
        if not self._chunk_open:
            self._chunk_open = True
            c.on_chunk_begin()
        if c.per_batch_metrics:
            c.reset_metrics()
        if self._has_user_callbacks:
            index = c.progress.batches
            if self._bpe:
                if not self._epoch_open:
                    self._epoch_open = True
                    self._user.on_epoch_begin(index // self._bpe)
                index %= self._bpe
            self._user.on_train_batch_begin(index)

    def on_train_batch_end(self, batch: int, logs: Mapping[str, Any] | None = None) -> None:
        c = self._c
        p = c.progress
        p.batches += 1
        if c.per_batch_metrics:
            logs = {k: float(v) for k, v in (logs or {}).items()}
            c.record_batch_metrics(logs)
        if self._has_user_callbacks:
            index = p.batches - 1
            if self._bpe:
                index %= self._bpe
            self._user.on_train_batch_end(index, logs)
            if self._bpe and p.batches % self._bpe == 0:
                self._epoch_open = False
                self._user.on_epoch_end(p.batches // self._bpe - 1, {})
        c.progressed = True
        # Only a callback can ask to stop between boundaries: without one, several workers
        # skip asking the chief (a broadcast) after every batch.
        may_stop = self._has_user_callbacks or c._dist.size == 1
        if c._loop.at_boundary() or (may_stop and c.stop_requested()):
            self._chunk_open = False
            if not c.on_chunk_end(dict(logs or {})):
                self.model.stop_training = True


class _LogsReducer:
    """Each worker's logs of a step (the values of its own ``train_step``) averaged over the
    workers, as floats: ONE collective for all of them (one per dtype), each value the mean
    that a ``strategy.reduce(MEAN)`` of it alone gives. Every worker must call it at the
    same step."""

    def __init__(self, strategy: tf.distribute.Strategy) -> None:
        self._strategy = strategy
        self._function: Any = None

    def __call__(self, own: Any) -> dict[str, float]:
        if not own:
            return {}
        if self._function is None:
            self._function = tf.function(self._reduce)
        means = self._function(own)
        return {k: float(means[k]) for k in own}

    def _reduce(self, own: Any) -> dict[str, tf.Tensor]:
        strategy = self._strategy
        mean = tf.distribute.ReduceOp.MEAN
        groups: list[list[str]] = []  # the names packed together: one dtype, known shapes
        shapes: dict[str, tf.TensorShape] = {}

        def pack(logs: dict[str, Any]) -> tuple[list[tf.Tensor], dict[str, tf.Tensor]]:
            by_dtype: dict[tf.DType, list[str]] = {}
            alone = {}
            for k, v in logs.items():
                v = tf.convert_to_tensor(v)
                if v.shape.is_fully_defined():
                    shapes[k] = v.shape
                    by_dtype.setdefault(v.dtype, []).append(k)
                else:
                    alone[k] = v
            groups[:] = by_dtype.values()
            packed = [tf.concat([tf.reshape(logs[k], [-1]) for k in g], 0) for g in groups]
            return packed, alone

        packed, alone = strategy.run(pack, args=(own,))
        out = {k: strategy.reduce(mean, v, axis=None) for k, v in alone.items()}
        for group, vector in zip(groups, packed, strict=True):
            means = strategy.reduce(mean, vector, axis=None)
            parts = tf.split(means, [shapes[k].num_elements() for k in group])
            out.update({k: tf.reshape(p, shapes[k]) for k, p in zip(group, parts, strict=True)})
        return {k: out[k] for k in own}


class _HostLogsReducer:
    """:class:`_LogsReducer` where the workers average through this machine's memory: the
    logs' scalars as one float32 vector, averaged in one all-reduce."""

    def __init__(self, allreduce: HostAllReduce) -> None:
        self._allreduce = allreduce

    def __call__(self, own: Any) -> dict[str, float]:
        names = list(own)
        if not names:
            return {}
        means = self._allreduce.mean(np.array([own[k] for k in names], dtype=np.float32))
        return {k: float(m) for k, m in zip(names, means, strict=True)}


class _BoundaryLogs(Mapping[str, float]):
    """A step's logs, reduced over the workers only when read (:class:`_LogsReducer`): the
    platform callback reads them at chunk boundaries only, where every worker reads them,
    so that the other steps need no collective of their own."""

    def __init__(self, own: Any, reduce: Callable[[Any], dict[str, float]]) -> None:
        self._own = own
        self._reduce = reduce
        self._values: dict[str, float] | None = None

    def _read(self) -> dict[str, float]:
        if self._values is None:
            self._values = self._reduce(self._own)
        return self._values

    def __getitem__(self, key: str) -> float:
        return self._read()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._own)

    def __len__(self) -> int:
        return len(self._own)


def _batch_spec(batch: Any) -> Any:
    """The ``TensorSpec`` structure of batches like ``batch``, of any batch size."""
    return tf.nest.map_structure(
        lambda a: tf.TensorSpec([None, *a.shape[1:]], tf.as_dtype(a.dtype)), batch
    )


def _mean_of(batches: list[dict[str, float]]) -> dict[str, float]:
    names = batches[0].keys()
    return {k: sum(b[k] for b in batches) / len(batches) for k in names}
