"""Drives an EstimatorTrial: one ``estimator.train`` call steered between batches by a PEDL
hook, validation through ``estimator.evaluate``, and checkpoints made of the estimator's
model-directory checkpoint.

The estimator trains on a model directory of the trial's own (a temporary directory, filled
from the latest PEDL checkpoint on resume, so the global step goes on from there). Its one
``train`` call builds the training graph once; PEDL's hook (:class:`_ControlHook`) counts
batches and, at each chunk boundary, the controller reports the chunk's training metrics,
validates and checkpoints when due (saving the session to the model directory first, which
``evaluate`` and ``export_saved_model`` read), and decides whether to train on (the searcher,
a stop request, a preemption). The training input is the train spec's dataset, repeated, with
the batches already trained skipped, so a resumed trial reads the batches an uninterrupted one
would.
"""

from __future__ import annotations

import inspect
import json
import logging
import os
import pickle
import random
import re
import shutil
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import numpy as np
import tensorflow as tf

from pedl import core, model_def
from pedl._checkpoint_metadata import checkpoint_metadata, read_checkpoint_metadata
from pedl._chunk_loop import ChunkLoop
from pedl._trial_error import TrialError
from pedl.config import Length
from pedl.estimator import _model_dir
from pedl.estimator._context import EstimatorTrialContext, ServingInputReceiverFn
from pedl.estimator._requirements import tf_estimator
from pedl.estimator._run_hook import RunHook
from pedl.vocabulary import TrialOutcome

if TYPE_CHECKING:
    from pedl.estimator._trial import EstimatorTrial

logger = logging.getLogger("pedl.estimator")

CHECKPOINT_FORMAT = "pedl.estimator/1"
FRAMEWORK = "tensorflow-estimator"
STATE_FILE = "pedl_state.json"
RNG_FILE = "pedl_rng.pkl"
CODE_DIR = "code"
_RESERVED = frozenset(
    {
        core.METADATA_FILE,
        STATE_FILE,
        RNG_FILE,
        CODE_DIR,
        _model_dir.STATE_FILE,
        _model_dir.GRAPH_FILE,
    }
)
_EXPORT_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")


@dataclass
class _Progress:
    """The counters a checkpoint carries so that a resumed run continues the same schedule."""

    batches: int = 0
    last_validation: int = -1
    last_checkpoint: int = -1
    best_metric: float | None = None
    last_searcher_metric: float | None = None


def seed_everything(seed: int) -> None:
    """Seed Python, NumPy and TensorFlow's graph-level seed from the trial seed (the
    estimator's graphs take it from ``RunConfig.tf_random_seed``, set to the same)."""
    random.seed(seed)
    np.random.seed(seed % 2**32)
    tf.compat.v1.set_random_seed(seed)


def quiet_tensorflow_logger() -> None:
    """Keep the estimator's INFO lines (one per graph built, saved, restored) out of the
    trial's log: its logger shows WARNING and up, once, unless the trial set its level."""
    tf_logger = logging.getLogger("tensorflow")
    if tf_logger.level == logging.NOTSET:
        tf_logger.setLevel(logging.WARNING)
        tf_logger.propagate = False


def configure_determinism() -> None:
    """Turn on TensorFlow's op determinism unless ``PEDL_OP_DETERMINISM=0``."""
    if os.environ.get("PEDL_OP_DETERMINISM", "1") != "0":
        tf.config.experimental.enable_op_determinism()


class EstimatorTrialController:
    """Runs one EstimatorTrial in this process (see the module docstring)."""

    def __init__(
        self,
        trial_factory: Callable[[EstimatorTrialContext], EstimatorTrial],
        context: core.Context,
    ) -> None:
        self.progressed = False
        """True once a training batch completed in this run (see pedl.TrialController)."""
        self._core = context
        self._info = context.info
        self._config = context.info.config
        if context.distributed.get_size() > 1:
            raise TrialError(
                "EstimatorTrial trains on one slot; set resources.slots_per_trial to 1 "
                "(or use pedl.keras.TFKerasTrial for distributed training)"
            )
        quiet_tensorflow_logger()
        seed_everything(self._info.trial_seed)
        configure_determinism()
        logger.info("EstimatorTrial on TensorFlow %s", tf.__version__)
        self.context = EstimatorTrialContext(context)
        self.trial = trial_factory(self.context)
        hparams = self.context.get_hparams()
        self._user_estimator = _build(self.trial.build_estimator, hparams)
        if not isinstance(self._user_estimator, tf_estimator.Estimator):
            raise TrialError(
                f"build_estimator() returned {type(self._user_estimator).__name__}, expected a "
                "tf.estimator.Estimator"
            )
        train_spec = _build(self.trial.build_train_spec, hparams)
        if not isinstance(train_spec, tf_estimator.TrainSpec):
            raise TrialError(
                f"build_train_spec() returned {type(train_spec).__name__}, expected a "
                "tf.estimator.TrainSpec"
            )
        self._eval_spec = _build(self.trial.build_validation_spec, hparams)
        if not isinstance(self._eval_spec, tf_estimator.EvalSpec):
            raise TrialError(
                f"build_validation_spec() returned {type(self._eval_spec).__name__}, expected a "
                "tf.estimator.EvalSpec"
            )
        self._serving_fns = _check_serving_fns(
            _build(self.trial.build_serving_input_receiver_fns, hparams)
        )
        self._train_input_fn = train_spec.input_fn
        self._train_hooks = list(train_spec.hooks)
        self._run_hooks = [
            h for h in [*self._train_hooks, *self._eval_spec.hooks] if isinstance(h, RunHook)
        ]
        self._workdir = Path(tempfile.mkdtemp(prefix=f"pedl-estimator-{self._info.trial_id}-"))
        self.model_dir = self._workdir / "model"
        self.model_dir.mkdir()
        self.estimator: Any = None
        self._loop = ChunkLoop(
            context,
            _Progress(),
            self._to_batches,
            validate=self._validate,
            checkpoint=self._checkpoint,
            stop_requested=self.context.get_stop_requested,
            logger=logger,
        )
        self._chunk_sums: dict[str, float] = {}
        self._chunk_batches = 0
        self._session: Any = None
        self._saved_batches: int | None = None
        self._saver: Any = None
        self._global_step_tensor: Any = None
        self.global_step: int | None = None
        """The estimator's global step after the latest chunk (or restored checkpoint)."""

    @classmethod
    def from_definition(
        cls, definition: model_def.ModelDefinition, context: core.Context
    ) -> EstimatorTrialController:
        trial_class = definition.trial_class
        if trial_class is None:
            raise TrialError("the model definition has no Trial class")
        factory = cast("Callable[[EstimatorTrialContext], EstimatorTrial]", trial_class)
        return cls(factory, context)

    @property
    def progress(self) -> _Progress:
        """The counters (batches trained, the latest validation and checkpoint, ...)."""
        return self._loop.progress

    # Set-up ------------------------------------------------------------------------------

    def _make_estimator(self, warm_start_from: Any) -> Any:
        """The user's estimator, on PEDL's model directory and seed, saving only when PEDL
        says (at the end of each chunk)."""
        user = self._user_estimator
        config = user.config.replace(
            model_dir=str(self.model_dir),
            tf_random_seed=self._info.trial_seed,
            save_checkpoints_steps=None,
            save_checkpoints_secs=None,
            log_step_count_steps=None,
        )
        _remove_if_unused(user.model_dir)
        return tf_estimator.Estimator(
            model_fn=user.model_fn,
            config=config,
            warm_start_from=warm_start_from or getattr(user, "_warm_start_settings", None),
        )

    def _to_batches(self, length: Length) -> int:
        return self.context.length_to_batches(length)

    # Running -----------------------------------------------------------------------------

    def run(self) -> TrialOutcome:
        """Train until the searcher closes the trial, a preemption, or the trial stops."""
        try:
            warm_start = None
            if self._info.latest_checkpoint:
                self._restore(self._info.latest_checkpoint)
            elif self._info.warm_start_checkpoint:
                warm_start = self._warm_start(self._info.warm_start_checkpoint)
            self.estimator = self._make_estimator(warm_start)
            self._loop.start()
            self.estimator.train(
                input_fn=_positioned_input_fn(self._train_input_fn, self.progress.batches),
                hooks=[*self._train_hooks, _ControlHook(self)],
            )
            if self._loop.outcome is None:
                # Training ended without PEDL asking (a hook of the model_fn's stopped it): the
                # trial stopped itself.
                self.context.set_stop_requested(True)
                self._loop.advance()
        finally:
            self._session = None
            for hook in self._run_hooks:
                hook.on_trial_close()
            shutil.rmtree(self._workdir, ignore_errors=True)
        return self._loop.result()

    # Called by the control hook, inside estimator.train ----------------------------------

    def on_session_start(self, session: Any, saver: Any, global_step: Any) -> bool:
        """The training session is up (variables initialized or restored): validate first if
        the config asks; return whether to train (else the outcome is set)."""
        self._session, self._saver, self._global_step_tensor = session, saver, global_step
        self.global_step = int(session.run(global_step))
        # A restored model directory holds the state at this batch already.
        restored = _model_dir.latest_prefix(self.model_dir) is not None
        self._saved_batches = self.progress.batches if restored else None
        return self._loop.begin()

    def on_batch_end(self, summaries: Mapping[str, float], stop_asked: bool) -> bool:
        """One batch trained (``summaries``: its scalar summaries; ``stop_asked``: a training
        hook asked to stop); at a boundary report, validate, checkpoint and decide. Returns
        whether to train on."""
        p = self.progress
        p.batches += 1
        self.progressed = True
        for name, value in summaries.items():
            self._chunk_sums[name] = self._chunk_sums.get(name, 0.0) + value
        self._chunk_batches += 1
        if stop_asked:
            self.context.set_stop_requested(True)
        if not self._loop.at_boundary() and not self.context.get_stop_requested():
            return True
        self._report_training()
        self._loop.end_chunk()
        return self._loop.advance()

    def on_session_end(self) -> None:
        """Training ended: the model directory gets the latest state."""
        self._save_model()
        self._session = None

    # A chunk's end -----------------------------------------------------------------------

    def _report_training(self) -> None:
        """Report the chunk's training metrics: each scalar summary's mean over its batches
        (``loss_1`` as ``loss`` when there is no ``loss``, as Determined did)."""
        p = self.progress
        n = self._chunk_batches
        metrics = {k: v / n for k, v in self._chunk_sums.items()} if n else {}
        if "loss" not in metrics and "loss_1" in metrics:
            metrics["loss"] = metrics.pop("loss_1")
        self._chunk_sums, self._chunk_batches = {}, 0
        self._core.train.report_training_metrics(p.batches, metrics)
        shown = " ".join(f"{k}={v:.4g}" for k, v in metrics.items())
        logger.info("trained to batch %d: %s", p.batches, shown)

    def _save_model(self) -> None:
        """Save the training session's variables to the model directory (where ``evaluate``
        and ``export_saved_model`` read them) unless it holds this batch's state already."""
        if self._session is None or self._saved_batches == self.progress.batches:
            return
        step = int(self._session.run(self._global_step_tensor))
        self.global_step = step
        self._saver.save(self._session, str(self.model_dir / "model.ckpt"), global_step=step)
        self._saved_batches = self.progress.batches
        _model_dir.prune(self.model_dir)

    # Validation --------------------------------------------------------------------------

    def _validate(self) -> None:
        self._save_model()
        spec = self._eval_spec
        results = self.estimator.evaluate(
            input_fn=spec.input_fn, steps=spec.steps, hooks=list(spec.hooks), name=spec.name
        )
        self._loop.record_validation(_scalar_metrics(results))

    # Checkpoints -------------------------------------------------------------------------

    def _checkpoint(self) -> None:
        """Write a checkpoint of the state at ``progress.batches`` (the chunk loop's)."""
        p = self.progress
        self._save_model()
        metadata = checkpoint_metadata(
            self._core,
            checkpoint_format=CHECKPOINT_FORMAT,
            framework=FRAMEWORK,
            versions={"tensorflow_version": tf.__version__},
            batches=p.batches,
            validation_metrics=self._loop.last_validation_metrics,
            global_step=self.global_step,
        )
        with self._core.checkpoint.store_path(metadata) as (path, _storage_id):
            metadata["model_checkpoint"] = _model_dir.copy_latest(self.model_dir, path)
            saved_models = {}
            for name, fn in self._serving_fns.items():
                exported = self.estimator.export_saved_model(str(path / name), fn)
                saved_models[name] = Path(os.fsdecode(exported)).relative_to(path).as_posix()
            metadata["saved_models"] = saved_models
            (path / STATE_FILE).write_text(json.dumps({"progress": asdict(p)}))
            with open(path / RNG_FILE, "wb") as f:
                pickle.dump({"random": random.getstate(), "numpy": np.random.get_state()}, f)
            model_def.copy_tree(self._info.code_dir, path / CODE_DIR)
            for hook in self._run_hooks:
                hook.on_checkpoint_end(str(path))

    def _read_checkpoint(self, storage_id: str, path: Path, what: str) -> dict[str, Any]:
        return read_checkpoint_metadata(
            path,
            storage_id,
            checkpoint_format=CHECKPOINT_FORMAT,
            what=what,
            reader="EstimatorTrial",
        )

    def _restore(self, storage_id: str) -> None:
        with self._core.checkpoint.restore_path(storage_id) as path:
            metadata = self._read_checkpoint(storage_id, path, "checkpoint")
            _model_dir.copy_latest(path, self.model_dir)
            state = json.loads((path / STATE_FILE).read_text())
            self._loop.progress = _Progress(**state["progress"])
            with open(path / RNG_FILE, "rb") as f:
                rng = pickle.load(f)
            random.setstate(rng["random"])
            np.random.set_state(rng["numpy"])
            self._loop.last_validation_metrics = metadata.get("validation_metrics", {})
            self.global_step = metadata.get("global_step")
            for hook in self._run_hooks:
                hook.on_checkpoint_load(str(path))
        logger.info(
            "resumed from checkpoint %s at batch %d (global step %s)",
            storage_id,
            self.progress.batches,
            self.global_step,
        )

    def _warm_start(self, storage_id: str) -> Any:
        """Settings that start the model from another trial's checkpoint: its trainable
        variables only, counters from 0."""
        with self._core.checkpoint.restore_path(storage_id) as path:
            self._read_checkpoint(storage_id, path, "the warm-start checkpoint")
            source = self._workdir / "warm_start"
            _model_dir.copy_latest(path, source)
        logger.info("warm start: trainable variables from checkpoint %s", storage_id)
        return tf_estimator.WarmStartSettings(ckpt_to_initialize_from=str(source))


class _ControlHook(tf_estimator.SessionRunHook):
    """PEDL's hook in the one ``estimator.train`` call: hands the controller the session, each
    batch's scalar summaries (the loss among them) and the training hooks' stop requests, and
    stops training when the controller says so."""

    def __init__(self, controller: EstimatorTrialController) -> None:
        self._controller = controller
        self._summary: Any = None
        self._global_step: Any = None
        self._saver: Any = None
        self._stopping = False

    def begin(self) -> None:
        scalars = [
            s
            for s in tf.compat.v1.get_collection(tf.compat.v1.GraphKeys.SUMMARIES)
            if s.op.type == "ScalarSummary"
        ]
        self._summary = tf.compat.v1.summary.merge(scalars) if scalars else None
        self._global_step = tf.compat.v1.train.get_global_step()
        savers = tf.compat.v1.get_collection(tf.compat.v1.GraphKeys.SAVERS)
        self._saver = (
            savers[0]
            if savers
            else tf.compat.v1.train.Saver(sharded=True, save_relative_paths=True)
        )

    def after_create_session(self, session: Any, coord: Any) -> None:
        if not self._controller.on_session_start(session, self._saver, self._global_step):
            self._stopping = True
            coord.request_stop()

    def before_run(self, run_context: Any) -> Any:
        fetches = {} if self._summary is None else {"summary": self._summary}
        return tf_estimator.SessionRunArgs(fetches)

    def after_run(self, run_context: Any, run_values: Any) -> None:
        summaries: dict[str, float] = {}
        if "summary" in run_values.results:
            summary = tf.compat.v1.Summary()
            summary.ParseFromString(run_values.results["summary"])
            for value in summary.value:
                if value.HasField("simple_value"):
                    summaries[value.tag] = value.simple_value
        stop_asked = bool(run_context.stop_requested) and not self._stopping
        if not self._controller.on_batch_end(summaries, stop_asked):
            self._stopping = True
            run_context.request_stop()

    def end(self, session: Any) -> None:
        self._controller.on_session_end()


def _build(method: Callable[..., Any], hparams: dict[str, Any]) -> Any:
    """Call a ``build_*`` method: with the hyperparameters when it takes an argument (PEDL
    0.x's ``build_estimator(self, hparams)``), else with none (Determined's form)."""
    try:
        parameters = inspect.signature(method).parameters.values()
    except (TypeError, ValueError):
        return method()
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    if any(p.kind in positional and p.default is p.empty for p in parameters):
        return method(hparams)
    return method()


def _check_serving_fns(fns: Any) -> dict[str, ServingInputReceiverFn]:
    if fns is None:
        return {}
    if not isinstance(fns, Mapping):
        raise TrialError(
            "build_serving_input_receiver_fns() must return a dict of names to "
            f"serving_input_receiver_fn, got {type(fns).__name__}"
        )
    for name, fn in fns.items():
        if not isinstance(name, str) or not _EXPORT_NAME.fullmatch(name) or name in _RESERVED:
            raise TrialError(
                f"build_serving_input_receiver_fns(): {name!r} cannot name a SavedModel "
                "directory in a checkpoint: use letters, digits, '_', '.' and '-', and none of "
                f"{', '.join(sorted(_RESERVED))}"
            )
        if not callable(fn):
            raise TrialError(
                f"build_serving_input_receiver_fns(): {name!r} maps to {type(fn).__name__}, "
                "not a function"
            )
    return dict(fns)


def _positioned_input_fn(user_fn: Callable[..., Any], skip: int) -> Callable[..., Any]:
    """The train spec's ``input_fn``, its dataset repeated and its first ``skip`` batches
    skipped. The estimator passes ``mode``, ``params`` and ``config``; the user's function
    gets those it names."""

    def input_fn(mode: Any, params: Any, config: Any) -> Any:
        available = {"mode": mode, "params": params, "config": config}
        try:
            names = set(inspect.signature(user_fn).parameters)
        except (TypeError, ValueError):
            names = set()
        dataset = user_fn(**{k: v for k, v in available.items() if k in names})
        if not isinstance(dataset, tf.data.Dataset):
            raise TrialError(
                "the train spec's input_fn must return a tf.data.Dataset (of (features, labels) "
                f"batches), got {type(dataset).__name__}"
            )
        dataset = dataset.repeat()
        return dataset.skip(skip) if skip else dataset

    return input_fn


def _remove_if_unused(model_dir: str | None) -> None:
    """Remove the empty temporary directory an estimator built without ``model_dir`` made for
    itself (PEDL trains on its own model directory)."""
    if not model_dir:
        return
    path = Path(model_dir)
    if (
        path.parent == Path(tempfile.gettempdir())
        and path.name.startswith("tmp")
        and path.is_dir()
        and not any(path.iterdir())
    ):
        path.rmdir()


def _scalar_metrics(results: Mapping[str, Any]) -> dict[str, float]:
    """``evaluate``'s results as floats: scalars only, without ``global_step``."""
    metrics = {}
    for name, value in results.items():
        if name == "global_step" or np.ndim(value) != 0:
            continue
        try:
            metrics[name] = float(value)
        except (TypeError, ValueError):
            continue
    return metrics
