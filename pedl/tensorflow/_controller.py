"""Drives a TensorFlowTrial: one ``tf.compat.v1`` graph and session per process.

The controller builds one graph: the training dataset (repeated, positioned by skipping the
batches already trained) and the validation dataset feed one iterator chosen by a string
handle; ``build_graph(record, is_training)`` runs on its records, and
``optimizer().minimize(loss)`` (after the graph's ``UPDATE_OPS``) is the training step. It
trains in chunks of at most ``scheduling_unit`` batches, cut where validations, checkpoints
or searcher operations fall due; after each chunk it reports the chunk's averaged metrics,
validates and checkpoints as due, and asks ``preempt``.

A checkpoint holds the graph's variables (``tf.compat.v1.train.Saver``: weights, optimizer
slots, the global step), Python's and NumPy's RNG states, the batch counters (the data
position) and the model definition. The graph is seeded with the trial seed, so a resumed
process builds the same op seeds and skips to the same data position. Stateful random ops
inside ``build_graph`` (``tf.nn.dropout``) restart their sequences in a new process: for
bitwise-exact resume with randomness in the graph, use stateless ops seeded from the global
step (``tf.nn.experimental.stateless_dropout``).
"""

from __future__ import annotations

import json
import logging
import os
import pickle
import random
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import tensorflow as tf

from pedl import core, model_def
from pedl._checkpoint_metadata import checkpoint_metadata, read_checkpoint_metadata
from pedl._chunk_loop import ChunkLoop
from pedl._trial_error import TrialError
from pedl.callback import Callback
from pedl.config import Length
from pedl.vocabulary import TrialOutcome

if TYPE_CHECKING:
    from pedl.tensorflow._trial import TensorFlowTrial

logger = logging.getLogger("pedl.tensorflow")

CHECKPOINT_FORMAT = "pedl.tensorflow/1"
FRAMEWORK = "tensorflow-graph"
MODEL_DIR = "model"
"""The Saver's files, under the checkpoint: ``model/model.ckpt.*``."""
MODEL_PREFIX = "model.ckpt"
_STATE_DIR = "state"
_TRIAL_STATE = "trial_state.json"
_RNG_STATE = "rng.pkl"


@dataclass
class _Progress:
    """The counters a checkpoint carries so that a resumed run continues the same schedule."""

    batches: int = 0
    steps: int = 0
    last_validation: int = -1
    last_checkpoint: int = -1
    chunk_start: int = 0
    best_metric: float | None = None
    last_searcher_metric: float | None = None


class TensorFlowTrialController:
    """Runs one TensorFlowTrial in this process (see the module docstring)."""

    def __init__(
        self,
        trial_factory: Callable[[dict[str, Any]], TensorFlowTrial],
        make_data_loaders: Callable[[dict[str, Any], dict[str, Any]], Any],
        context: core.Context,
    ) -> None:
        self.progressed = False
        """True once a training batch completed in this run (see pedl.TrialController)."""
        self._core = context
        self._info = context.info
        self._config = context.info.config
        if context.distributed.get_size() > 1:
            raise TrialError(
                "TensorFlowTrial trains on one slot; set resources.slots_per_trial to 1 "
                "(or use pedl.keras.TFKerasTrial for distributed training)"
            )
        seed = self._info.trial_seed
        random.seed(seed)
        np.random.seed(seed % 2**32)
        if os.environ.get("PEDL_OP_DETERMINISM", "1") != "0":
            tf.config.experimental.enable_op_determinism()
        hparams = dict(self._info.hparams)
        self.trial = trial_factory(hparams)
        self.callbacks: list[Callback] = list(self.trial.callbacks(hparams))
        for cb in self.callbacks:
            set_trial_id = getattr(cb, "set_trial_id", None)
            if callable(set_trial_id):
                set_trial_id(self._info.trial_id)
        self._loop = ChunkLoop(
            context,
            _Progress(),
            self._to_batches,
            validate=self._validate,
            checkpoint=self._checkpoint,
            metric_choices="validation_metrics()",
            logger=logger,
        )
        self.graph = tf.Graph()
        with self.graph.as_default():
            tf.compat.v1.set_random_seed(seed)
            self._build(make_data_loaders(self._config.as_dict(), dict(hparams)))
        self.session = tf.compat.v1.Session(graph=self.graph, config=self.trial.session_config())
        self.session.run(self._init_op)
        self._train_handle = self.session.run(self._train_iterator.string_handle())
        self._validation_handle = self.session.run(self._validation_iterator.string_handle())

    @classmethod
    def from_definition(
        cls, definition: model_def.ModelDefinition, context: core.Context
    ) -> TensorFlowTrialController:
        if definition.trial_class is None:
            raise TrialError("the model definition has no Trial class")
        if definition.make_data_loaders is None:
            raise TrialError(
                "a TensorFlowTrial's model definition must define "
                "make_data_loaders(experiment_config, hparams), returning the batched "
                "(training, validation) tf.data.Datasets"
            )
        trial_class: Any = definition.trial_class
        return cls(trial_class, definition.make_data_loaders, context)

    @property
    def progress(self) -> _Progress:
        """The counters (batches trained, the latest validation and checkpoint, ...)."""
        return self._loop.progress

    # Set-up ------------------------------------------------------------------------------

    def _build(self, loaders: Any) -> None:
        if not (isinstance(loaders, tuple | list) and len(loaders) == 2):
            raise TrialError(
                "make_data_loaders() must return (training, validation) tf.data.Datasets, got "
                f"{type(loaders).__name__}"
            )
        training, validation = loaders
        for name, dataset in (("training", training), ("validation", validation)):
            if not isinstance(dataset, tf.data.Dataset):
                raise TrialError(
                    f"make_data_loaders() returned a {type(dataset).__name__} as the {name} "
                    "data; return batched tf.data.Datasets"
                )
        self._skip = tf.compat.v1.placeholder_with_default(
            tf.constant(0, tf.int64), shape=[], name="pedl_skip_batches"
        )
        stream = training.repeat().skip(self._skip)
        self._train_iterator = tf.compat.v1.data.make_initializable_iterator(stream)
        self._validation_iterator = tf.compat.v1.data.make_initializable_iterator(validation)
        types = tf.compat.v1.data.get_output_types(stream)
        if tf.compat.v1.data.get_output_types(validation) != types:
            raise TrialError(
                "the training and validation datasets of make_data_loaders() must have the same "
                f"element types; got {types} and {tf.compat.v1.data.get_output_types(validation)}"
            )
        try:
            shapes = tf.nest.map_structure(
                lambda a, b: a.most_specific_compatible_shape(b),
                tf.compat.v1.data.get_output_shapes(stream),
                tf.compat.v1.data.get_output_shapes(validation),
            )
        except (TypeError, ValueError) as e:
            raise TrialError(
                "the training and validation datasets of make_data_loaders() must have the same "
                f"element structure: {e}"
            ) from e
        self._handle = tf.compat.v1.placeholder(tf.string, shape=[], name="pedl_data_handle")
        iterator = tf.compat.v1.data.Iterator.from_string_handle(
            self._handle, types, shapes, tf.compat.v1.data.get_output_classes(stream)
        )
        self._is_training = tf.compat.v1.placeholder_with_default(
            False, shape=[], name="pedl_is_training"
        )
        outputs = self.trial.build_graph(iterator.get_next(), self._is_training)
        if not isinstance(outputs, dict) or "loss" not in outputs:
            raise TrialError(
                'build_graph() must return a dict of tensors with a "loss" entry, got '
                f"{type(outputs).__name__}"
                + (f" with keys {sorted(outputs)}" if isinstance(outputs, dict) else "")
            )
        training_metrics = list(self.trial.training_metrics())
        if "loss" in training_metrics:
            raise TrialError('training_metrics() must not name "loss" (it is always reported)')
        validation_metrics = list(self.trial.validation_metrics())
        for method, names in (
            ("training_metrics", training_metrics),
            ("validation_metrics", validation_metrics),
        ):
            missing = [n for n in names if n not in outputs]
            if missing:
                raise TrialError(
                    f"{method}() names {missing}, which build_graph() did not return "
                    f"(it returned {sorted(outputs)})"
                )
        self._global_step = tf.compat.v1.train.get_or_create_global_step()
        optimizer = self.trial.optimizer()
        update_ops = tf.compat.v1.get_collection(tf.compat.v1.GraphKeys.UPDATE_OPS)
        with tf.control_dependencies(update_ops):
            self._train_op = optimizer.minimize(outputs["loss"], global_step=self._global_step)
        self._train_fetches = {name: outputs[name] for name in ["loss", *training_metrics]}
        self._validation_fetches = {name: outputs[name] for name in validation_metrics}
        self._saver = tf.compat.v1.train.Saver(max_to_keep=None, save_relative_paths=True)
        self._reset_step = self._global_step.assign(0)
        self._init_op = tf.group(
            tf.compat.v1.global_variables_initializer(),
            tf.compat.v1.local_variables_initializer(),
        )

    def _to_batches(self, length: Length) -> int:
        if length.unit == "batches":
            return length.value
        batch_size = self._info.hparams.get("global_batch_size")
        if not isinstance(batch_size, int) or batch_size <= 0:
            raise TrialError(
                f"a length in {length.unit} needs a positive integer 'global_batch_size' "
                "hyperparameter (the datasets' batch size); or give lengths in batches"
            )
        return length.to_batches(batch_size, self._config.records_per_epoch)

    # Running -----------------------------------------------------------------------------

    def run(self) -> TrialOutcome:
        """Train until the searcher closes the trial or a preemption."""
        try:
            if self._info.latest_checkpoint:
                self._restore(self._info.latest_checkpoint)
            elif self._info.warm_start_checkpoint:
                self._warm_start(self._info.warm_start_checkpoint)
            p = self.progress
            self.session.run(self._train_iterator.initializer, {self._skip: p.batches})
            if p.batches == 0:
                for cb in self.callbacks:
                    cb.on_trial_begin()
            self._loop.start()
            keep_going = self._loop.begin()
            while keep_going:
                self._train_chunk()
                keep_going = self._loop.advance()
        finally:
            self.session.close()
        return self._loop.result()

    def _train_chunk(self) -> None:
        p = self.progress
        p.steps += 1
        for cb in self.callbacks:
            cb.on_train_step_begin(p.steps)
        fetches = {"step": self._train_op, "metrics": self._train_fetches}
        feed = {self._handle: self._train_handle, self._is_training: True}
        per_batch: list[dict[str, float]] = []
        while not self._loop.at_boundary():
            try:
                result = self.session.run(fetches, feed)
            except tf.errors.OutOfRangeError as e:
                raise TrialError("the training dataset of make_data_loaders() is empty") from e
            per_batch.append({k: float(np.mean(v)) for k, v in result["metrics"].items()})
            p.batches += 1
            self.progressed = True
        metrics = {name: float(np.mean([m[name] for m in per_batch])) for name in per_batch[0]}
        self._core.train.report_training_metrics(p.batches, metrics)
        for cb in self.callbacks:
            cb.on_train_step_end(p.steps, per_batch)
        p.chunk_start = p.batches  # the checkpoint's format keeps it
        self._loop.end_chunk()

    # Validation --------------------------------------------------------------------------

    def _validate(self) -> None:
        p = self.progress
        for cb in self.callbacks:
            cb.on_validation_step_begin(p.steps)
        self.session.run(self._validation_iterator.initializer)
        feed = {self._handle: self._validation_handle, self._is_training: False}
        per_batch: list[dict[str, float]] = []
        while True:
            try:
                result = self.session.run(self._validation_fetches, feed)
            except tf.errors.OutOfRangeError:
                break
            per_batch.append({k: float(np.mean(v)) for k, v in result.items()})
        if not per_batch:
            raise TrialError("the validation dataset of make_data_loaders() is empty")
        metrics = {name: float(np.mean([m[name] for m in per_batch])) for name in per_batch[0]}

        def call_callbacks() -> None:
            for cb in self.callbacks:
                cb.on_validation_step_end(p.steps, dict(metrics))

        self._loop.record_validation(metrics, after_report=call_callbacks)

    # Checkpoints -------------------------------------------------------------------------

    def _checkpoint(self) -> None:
        """Write a checkpoint of the state at ``progress.batches`` (the chunk loop's)."""
        p = self.progress
        metadata = checkpoint_metadata(
            self._core,
            checkpoint_format=CHECKPOINT_FORMAT,
            framework=FRAMEWORK,
            versions={"tensorflow_version": tf.__version__},
            batches=p.batches,
            validation_metrics=self._loop.last_validation_metrics,
        )
        with self._core.checkpoint.store_path(metadata) as (path, _storage_id):
            (path / MODEL_DIR).mkdir()
            with self.graph.as_default():
                self._saver.save(
                    self.session,
                    str(path / MODEL_DIR / MODEL_PREFIX),
                    write_meta_graph=False,
                    write_state=False,
                )
            state_dir = path / _STATE_DIR
            state_dir.mkdir()
            (state_dir / _TRIAL_STATE).write_text(json.dumps({"progress": asdict(p)}))
            with open(state_dir / _RNG_STATE, "wb") as f:
                pickle.dump({"python": random.getstate(), "numpy": np.random.get_state()}, f)
            model_def.copy_tree(self._info.code_dir, path / "code")

    def _read_metadata(self, path: Any, storage_id: str, what: str) -> dict[str, Any]:
        return read_checkpoint_metadata(
            path,
            storage_id,
            checkpoint_format=CHECKPOINT_FORMAT,
            what=what,
            reader="a TensorFlowTrial",
        )

    def _restore(self, storage_id: str) -> None:
        with self._core.checkpoint.restore_path(storage_id) as path:
            metadata = self._read_metadata(path, storage_id, "checkpoint")
            with self.graph.as_default():
                self._saver.restore(self.session, str(path / MODEL_DIR / MODEL_PREFIX))
            state_dir = path / _STATE_DIR
            trial_state = json.loads((state_dir / _TRIAL_STATE).read_text())
            self._loop.progress = _Progress(**trial_state["progress"])
            with open(state_dir / _RNG_STATE, "rb") as f:
                rng = pickle.load(f)
            random.setstate(rng["python"])
            np.random.set_state(rng["numpy"])
            self._loop.last_validation_metrics = metadata.get("validation_metrics", {})
        logger.info("resumed from checkpoint %s at batch %d", storage_id, self.progress.batches)

    def _warm_start(self, storage_id: str) -> None:
        """Start from another trial's checkpoint: its variables, the global step at 0."""
        with self._core.checkpoint.restore_path(storage_id) as path:
            self._read_metadata(path, storage_id, "the warm-start checkpoint")
            with self.graph.as_default():
                self._saver.restore(self.session, str(path / MODEL_DIR / MODEL_PREFIX))
            self.session.run(self._reset_step)
        logger.info("warm start: variables from checkpoint %s", storage_id)
