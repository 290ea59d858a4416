"""A script's run as a trial: its ``model.fit`` call becomes a TFKerasTrial trained by PEDL.

While the script runs, ``keras.Model.fit`` is replaced by :meth:`ScriptRun.fit`, which turns
the call's model, data, validation data and callbacks into a TFKerasTrial and trains it with
:class:`pedl.keras.TFKerasTrialController`: in chunks, with metrics, validations,
checkpoints, preemption and exact resume, for the searcher's length (``epochs`` is not
used then). Where the searcher has no length (``single``, ``grid`` or ``random`` without
``max_length``, as Determined 0.38 allows) the call's own ``epochs`` (times
``steps_per_epoch`` or the batches of one epoch) is the trial's length: the training code
decides, and the trial ends when that length is trained. When the trial is preempted the rest
of the script does not run.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import inspect
import logging
import math
import os
import runpy
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import tensorflow as tf

from pedl import core, model_def
from pedl.config import Length
from pedl.engine import MetricKind, TrialOutcome
from pedl.keras import TFKerasTrial, TFKerasTrialContext, TFKerasTrialController
from pedl.keras._keras import (
    LEGACY,
    PyDataset,
    announce_mode,
    flatten,
    keras,
    map_structure,
    set_random_seed,
)
from pedl.script._callback import DeterminedCallback
from pedl.script._core_api import CoreApiRun

logger = logging.getLogger("pedl.script")

DEFAULT_BATCH_SIZE = 32
"""Keras' batch size when ``fit`` gets arrays and no ``batch_size``."""

_FIT_SIGNATURE = inspect.signature(keras.Model.fit)
_KERAS_OWN_CALLBACKS = (keras.callbacks.History, keras.callbacks.ProgbarLogger)


class ScriptError(RuntimeError):
    """The script's use of ``fit`` is one PEDL cannot train; the message says why."""


class _Preempted(BaseException):
    """Unwinds the script once its fit() was preempted (checkpointed; the trial resumes
    later). A BaseException, so that the script's ``except Exception`` does not catch it."""


@dataclasses.dataclass(frozen=True)
class FitCall:
    """One ``model.fit`` call, as a TFKerasTrial sees it."""

    model: keras.Model
    training: Any
    validation: Any
    callbacks: list[Any]
    batch_size: int
    batches_per_epoch: int | None
    options: dict[str, Any]
    """``configure_fit`` options (verbose, shuffle, class_weight, validation_steps)."""
    determined: DeterminedCallback | None
    epochs: int = 1
    steps_per_epoch: int | None = None

    def length_in_batches(self) -> int:
        """The batches this call trains in plain Keras: ``epochs`` times ``steps_per_epoch``
        or the batches of one pass over the data. Raises ScriptError where neither is known
        (an endless dataset without ``steps_per_epoch``)."""
        per_epoch = self.steps_per_epoch or self.batches_per_epoch
        if per_epoch is None:
            raise ScriptError(
                "the searcher has no max_length, so the script's model.fit() decides how long "
                "the trial trains, but its length is unknown (a dataset of unknown size and no "
                "steps_per_epoch): pass steps_per_epoch= to fit(), or set searcher.max_length"
            )
        return self.epochs * per_epoch


class _OwnLength:
    """The searcher session of a trial whose script decides its length (the searcher has
    none): one operation, to the ``fit`` call's length in batches, completed here (the
    master's open-ended operation is left, and the trial ends as stopped by its code)."""

    def __init__(self, batches: int) -> None:
        self._batches = batches
        self.completed = False

    def next_length(self) -> int | None:
        return None if self.completed else self._batches

    def complete(self, length: int, searcher_metric: float) -> None:
        self.completed = True


class _FitTrial(TFKerasTrial):
    """The TFKerasTrial a script's fit() call stands for."""

    def __init__(self, context: TFKerasTrialContext, call: FitCall) -> None:
        super().__init__(context)
        self._call = call
        context.configure_fit(**call.options)

    def build_model(self) -> keras.Model:
        return self._call.model

    def build_training_data_loader(self) -> Any:
        return self._wrap(self._call.training)

    def build_validation_data_loader(self) -> Any:
        return self._wrap(self._call.validation)

    def keras_callbacks(self) -> list[keras.callbacks.Callback]:
        return list(self._call.callbacks)

    def _wrap(self, data: Any) -> Any:
        if isinstance(data, tf.data.Dataset):
            return self.context.wrap_dataset(data)
        return data


class _HistoryWriter:
    """Forwards metrics to the trial's TrainContext and keeps them for fit()'s History.

    With a :class:`DeterminedCallback` in the call, the metrics are also reported under the
    names Determined 0.38's callback reports (``keras.callbacks.Callback.on_test_end``'s logs):
    validation metrics without the ``val_`` prefix (``categorical_accuracy``, as 0.38 configs'
    ``searcher.metric`` names them; the ``val_`` names stay too), and ``batches`` and
    ``epochs`` (the trained batches and epochs, as 0.38's callback adds them) in both kinds.
    """

    def __init__(
        self, train: core.TrainContext, *, determined: bool, batches_per_epoch: int | None
    ) -> None:
        self._train = train
        self._determined = determined
        self._batches_per_epoch = batches_per_epoch
        self.history: dict[str, list[float]] = {}

    def write_metrics(
        self, kind: MetricKind, total_batches: int, metrics: Mapping[str, float]
    ) -> None:
        for name, value in metrics.items():
            self.history.setdefault(name, []).append(value)
        if self._determined:
            metrics = determined_names(kind, total_batches, metrics, self._batches_per_epoch)
        if kind is MetricKind.VALIDATION:
            self._train.report_validation_metrics(total_batches, metrics)
        else:
            self._train.report_training_metrics(total_batches, metrics)


def determined_names(
    kind: MetricKind,
    total_batches: int,
    metrics: Mapping[str, float],
    batches_per_epoch: int | None,
) -> dict[str, float]:
    """``metrics`` with the names Determined 0.38's ``DeterminedCallback`` reports added (see
    :class:`_HistoryWriter`); a name the metrics already have is kept as it is."""
    named = dict(metrics)
    if kind is MetricKind.VALIDATION:
        for name, value in metrics.items():
            if name.startswith("val_") and name[4:] not in named:
                named[name[4:]] = value
    named.setdefault("batches", float(total_batches))
    if batches_per_epoch:
        named.setdefault("epochs", total_batches / batches_per_epoch)
    return named


class ScriptRun:
    """Runs a simple model definition's script (or function) once, as the trial of
    ``context``; see the module docstring."""

    def __init__(self, definition: model_def.ModelDefinition, context: core.Context) -> None:
        self._definition = definition
        self._context = context
        self._controller: TFKerasTrialController | None = None
        self._outcome: TrialOutcome | None = None
        self._inside_fit = False
        self._core_api: CoreApiRun | None = None

    @property
    def progressed(self) -> bool:
        if self._core_api is not None and self._core_api.used:
            return True
        return self._controller is not None and self._controller.progressed

    def execute(self) -> TrialOutcome:
        """Run the entrypoint; return the outcome of its fit() call, or, for a script that
        trains without fit() (Determined's Core API), that of its run (see
        :class:`~pedl.script._core_api.CoreApiRun`, whose context ``core.init()`` yields)."""
        # The script builds its model before PEDL sees it: seed first, so that its initial
        # weights are the trial seed's.
        set_random_seed(self._context.info.trial_seed)
        announce_mode()
        core_api = self._core_api = CoreApiRun(self._context)
        with core_api.serving(), core.use_context(core_api.context), self._fit_intercepted():
            try:
                self._run_entrypoint()
            except _Preempted:
                pass
            except SystemExit as e:
                if e.code not in (0, None):
                    raise ScriptError(f"the script exited with status {e.code!r}") from e
        if self._outcome is None:
            # No fit(): a script with its own training loop (Determined's Core API), or none.
            outcome = core_api.outcome()
            if not core_api.used:
                logger.info(
                    "the script ended without calling model.fit() or reporting through the "
                    "Core API (core_context.train); the trial ends with it"
                )
            return outcome
        return self._outcome

    def _run_entrypoint(self) -> None:
        function = self._definition.entrypoint_function
        if function is not None:
            function()
            return
        script = self._definition.entrypoint_script
        assert script is not None
        code_dir = Path(self._context.info.code_dir)
        if not code_dir.is_dir():
            code_dir = code_dir.parent
        path = code_dir / script
        with _as_main_script(path, self._definition.entrypoint_args, code_dir):
            runpy.run_path(str(path), run_name="__main__")

    @contextlib.contextmanager
    def _fit_intercepted(self) -> Iterator[None]:
        original = keras.Model.fit

        @functools.wraps(original)
        def fit(model: keras.Model, *args: Any, **kwargs: Any) -> Any:
            if self._inside_fit or _keras2_callback_fit(model, args, kwargs):
                # The controller's own fit call; or a Keras 2 fit whose DeterminedCallback
                # (pedl.script._keras2) does what 0.38's did, through the Core API.
                return original(model, *args, **kwargs)
            return self.fit(model, args, kwargs)

        keras.Model.fit = fit
        try:
            yield
        finally:
            keras.Model.fit = original

    def fit(self, model: keras.Model, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """The script's ``model.fit(*args, **kwargs)``: train it as this trial."""
        if self._outcome is not None:
            raise ScriptError(
                "the script called model.fit() a second time; PEDL trains the first fit() call "
                "of a script for the searcher's whole length (put further training in the same "
                "call, or use a TFKerasTrial)"
            )
        call = parse_fit(model, args, kwargs, self._context.info.hparams)
        history_writer = _HistoryWriter(
            self._context.train,
            determined=call.determined is not None,
            batches_per_epoch=call.steps_per_epoch or call.batches_per_epoch,
        )
        context = self._trial_context(call, history_writer)
        own_length: _OwnLength | None = None
        if self._context.info.config.searcher_max_length is None:
            own_length = _OwnLength(call.length_in_batches())
            logger.info(
                "searcher.max_length is not set: the trial trains for model.fit()'s own length "
                "(%d batches)",
                own_length.next_length(),
            )
            context = dataclasses.replace(
                context, searcher=core.SearcherContext(own_length, "batches")
            )
        self._inside_fit = True
        try:
            self._controller = TFKerasTrialController(
                lambda trial_context: _FitTrial(trial_context, call), context
            )
            self._outcome = self._controller.run()
        finally:
            self._inside_fit = False
        if own_length is not None and own_length.completed:
            # The master's operation has no end; the script's length is trained.
            self._outcome = TrialOutcome.STOPPED_EARLY
        if self._outcome is TrialOutcome.PREEMPTED:
            raise _Preempted
        history = keras.callbacks.History()
        history.set_model(model)
        history.history = history_writer.history
        return history

    def _trial_context(self, call: FitCall, writer: _HistoryWriter) -> core.Context:
        """The trial's context as the TFKerasTrial of ``call`` needs it: the fit's batch size
        as ``global_batch_size``, DeterminedCallback's options applied, metrics recorded."""
        info = self._context.info
        config = info.config
        warm_start = info.warm_start_checkpoint
        determined = call.determined
        if determined is not None:
            if (
                determined.checkpoint_epochs > 0
                and config.min_checkpoint_period.value == 0
                and call.batches_per_epoch
            ):
                period = Length(
                    unit="batches", value=determined.checkpoint_epochs * call.batches_per_epoch
                )
                config = config.model_copy(update={"min_checkpoint_period": period})
            if determined.checkpoint and info.latest_checkpoint is None and warm_start is None:
                warm_start = determined.checkpoint
            metric = config.searcher.metric
            if not metric.startswith("val_"):
                # 0.38's callback reports validation metrics without the prefix (see
                # _HistoryWriter); the controller names them val_*.
                searcher = config.searcher.model_copy(update={"metric": f"val_{metric}"})
                config = config.model_copy(update={"searcher": searcher})
        info = dataclasses.replace(
            info,
            hparams={**info.hparams, "global_batch_size": call.batch_size},
            config=config,
            warm_start_checkpoint=warm_start,
        )
        train = core.TrainContext(writer, is_chief=self._context.distributed.is_chief)
        return dataclasses.replace(self._context, info=info, train=train)


def parse_fit(
    model: keras.Model, args: tuple[Any, ...], kwargs: dict[str, Any], hparams: Mapping[str, Any]
) -> FitCall:
    """Read a ``model.fit`` call's arguments as PEDL trains them (see :class:`FitCall`)."""
    try:
        bound = _FIT_SIGNATURE.bind(model, *args, **kwargs)
    except TypeError as e:
        raise ScriptError(f"model.fit() was called with arguments Keras does not take: {e}") from e
    bound.apply_defaults()
    a = bound.arguments
    x, y, sample_weight = a["x"], a["y"], a["sample_weight"]
    if x is None:
        raise ScriptError("model.fit() was called without training data (x)")
    callbacks = list(a["callbacks"] or [])
    determined = [cb for cb in callbacks if isinstance(cb, DeterminedCallback)]
    if len(determined) > 1:
        raise ScriptError("model.fit() got more than one DeterminedCallback")
    user_callbacks = [
        cb for cb in callbacks if not isinstance(cb, (DeterminedCallback, *_KERAS_OWN_CALLBACKS))
    ]
    validation = a["validation_data"]
    split = a["validation_split"]
    if validation is None and split:
        x, y, sample_weight, validation = _split(x, y, sample_weight, float(split))
    if validation is None:
        raise ScriptError(
            "model.fit() was called without validation_data (or validation_split): PEDL "
            "validates the model to report the searcher's metric; pass validation_data="
        )
    if _is_data_object(x):
        training = x
    else:
        training = (x, y) if sample_weight is None else (x, y, sample_weight)
    batch_size = _batch_size(a["batch_size"], x, hparams)
    ignored = [
        f"{name}={a[name]!r}"
        for name, default in (("epochs", 1), ("initial_epoch", 0), ("steps_per_epoch", None))
        if a[name] != default
    ]
    if ignored:
        logger.info(
            "model.fit(%s): not used when the searcher has a max_length; PEDL trains for it",
            ", ".join(ignored),
        )
    epochs, steps = a["epochs"], a["steps_per_epoch"]
    for name, value in (("epochs", epochs), ("steps_per_epoch", steps)):
        if value is not None and (
            isinstance(value, bool) or not isinstance(value, int) or value < 1
        ):
            raise ScriptError(f"model.fit({name}={value!r}): must be a positive integer")
    verbose = a["verbose"]
    return FitCall(
        model=model,
        training=training,
        validation=validation,
        callbacks=user_callbacks,
        batch_size=batch_size,
        batches_per_epoch=_batches_per_epoch(x, batch_size),
        options={
            "verbose": verbose not in (0, False),
            "shuffle": bool(a["shuffle"]),
            "class_weight": a["class_weight"],
            "validation_steps": a["validation_steps"],
        },
        determined=determined[0] if determined else None,
        epochs=epochs,
        steps_per_epoch=steps,
    )


def _keras2_callback_fit(model: keras.Model, args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    """Whether a Keras 2 mode ``fit`` has the Keras 2 ``DeterminedCallback`` (such a fit runs
    as Keras 2 runs it, see :mod:`pedl.script._keras2`)."""
    if not LEGACY:
        return False
    from pedl.script._keras2 import DeterminedCallback as Keras2Callback

    try:
        callbacks = _FIT_SIGNATURE.bind(model, *args, **kwargs).arguments.get("callbacks")
    except TypeError:
        return False
    return any(isinstance(cb, Keras2Callback) for cb in callbacks or [])


def _is_data_object(x: Any) -> bool:
    return isinstance(x, (tf.data.Dataset, PyDataset))


def _batch_size(given: Any, x: Any, hparams: Mapping[str, Any]) -> int:
    from_hparams = hparams.get("global_batch_size")
    if given is not None:
        if from_hparams is not None and from_hparams != given:
            raise ScriptError(
                f"model.fit(batch_size={given!r}) differs from the global_batch_size "
                f"hyperparameter ({from_hparams!r}); pass "
                "batch_size=pedl.get_hyperparameter('global_batch_size')"
            )
        size = given
    elif from_hparams is not None:
        size = from_hparams
    elif _is_data_object(x):
        size = _leading_dimension(x)
    else:
        size = DEFAULT_BATCH_SIZE
    if isinstance(size, bool) or not isinstance(size, int) or size <= 0:
        raise ScriptError(f"the batch size must be a positive integer, got {size!r}")
    return size


def _leading_dimension(data: Any) -> int:
    """The batch size of a batched dataset or PyDataset: its first batch's length."""
    if isinstance(data, tf.data.Dataset):
        first = next(iter(data.take(1)), None)
    else:
        first = data[0] if len(data) else None
    if first is None:
        raise ScriptError("the training data given to model.fit() is empty")
    leaves = flatten(first)
    return int(leaves[0].shape[0])


def _batches_per_epoch(x: Any, batch_size: int) -> int | None:
    if isinstance(x, tf.data.Dataset):
        cardinality = int(x.cardinality())
        return cardinality if cardinality > 0 else None
    if isinstance(x, PyDataset):
        return len(x)
    leaves = flatten(x)
    return math.ceil(len(leaves[0]) / batch_size) if leaves else None


def _split(x: Any, y: Any, sample_weight: Any, split: float) -> tuple[Any, Any, Any, Any]:
    """Keras' ``validation_split``: the last ``split`` of the arrays validates."""
    if _is_data_object(x) or not 0.0 < split < 1.0:
        raise ScriptError(
            "validation_split works with arrays and must be between 0 and 1; pass "
            "validation_data= instead"
        )
    n = len(flatten(x)[0])
    cut = int(n * (1.0 - split))

    def part(data: Any, s: slice) -> Any:
        return None if data is None else map_structure(lambda a: a[s], data)

    head, tail = slice(0, cut), slice(cut, n)
    validation: tuple[Any, ...] = (part(x, tail), part(y, tail))
    if sample_weight is not None:
        validation = (*validation, part(sample_weight, tail))
    return part(x, head), part(y, head), part(sample_weight, head), validation


@contextlib.contextmanager
def _as_main_script(path: Path, args: tuple[str, ...], code_dir: Path) -> Iterator[None]:
    """Run as ``python3 path args`` would: argv, the script's directory first on sys.path,
    the model definition as the working directory."""
    saved_argv, saved_cwd = sys.argv, os.getcwd()
    script_dir = str(path.parent)
    sys.argv = [str(path), *args]
    sys.path.insert(0, script_dir)
    os.chdir(code_dir)
    try:
        yield
    finally:
        os.chdir(saved_cwd)
        sys.argv = saved_argv
        with contextlib.suppress(ValueError):
            sys.path.remove(script_dir)
