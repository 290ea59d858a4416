"""A script's run as a trial: its ``model.fit`` call becomes a TFKerasTrial trained by PEDL.

While the script runs, ``keras.Model.fit`` is replaced by :meth:`ScriptRun.fit`, which turns
the call's model, data, validation data and callbacks into a TFKerasTrial and trains it with
:class:`pedl.keras.TFKerasTrialController`: in chunks, with metrics, validations,
checkpoints, preemption and exact resume. Where the searcher has no length (``single``,
``grid`` or ``random`` without ``max_length``, as Determined 0.38 allows) the call's own
``epochs`` (times ``steps_per_epoch`` or the batches of one epoch) is its length: the training
code decides, and the trial ends when the script does. Where it has one, a call trains up to
it, or its own ``epochs`` first where it passes ``epochs=``. When the trial is preempted the
rest of the script does not run.

Each ``fit`` call of a script is a stage of the one trial (:mod:`pedl.script._stages`): the
trial's batches, metrics and checkpoints count on across them, and a resumed trial replays
the stages it finished (each call returns at once, the model, optimizer and random
generators as that call left them, and its History) and resumes the stage of its checkpoint.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import inspect
import json
import logging
import math
import os
import pickle
import runpy
import sys
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import tensorflow as tf

from pedl import core, model_def
from pedl.config import Length
from pedl.keras import TFKerasTrial, TFKerasTrialContext, TFKerasTrialController, _state
from pedl.keras._build import build_variables
from pedl.keras._keras import (
    LEGACY,
    PyDataset,
    announce_mode,
    flatten,
    keras,
    map_structure,
    other_keras,
    set_random_seed,
)
from pedl.keras.callbacks import Callback
from pedl.script._callback import DeterminedCallback
from pedl.script._core_api import CoreApiRun
from pedl.script._keras_callbacks import KerasCallbacks, restore_ended
from pedl.script._other_keras import other_keras_fit_refused
from pedl.script._stages import (
    EpochHistory,
    SearcherLengths,
    StageCheckpoints,
    StageLengths,
    read_state,
    snapshot_dir,
    write_state,
)
from pedl.tuner import trial_search
from pedl.vocabulary import MetricKind, TrialOutcome

logger = logging.getLogger("pedl.script")

_CALLBACKS_FILE = "keras_callbacks.pkl"
"""A finished stage's end state: its Keras callbacks' states (see _keras_callbacks)."""

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
    validation_freq: int = 1
    """Validate every this many epochs (Keras's ``validation_freq``)."""
    epochs_given: bool = False
    """Whether the call passed ``epochs``: where the searcher has a max_length, the call
    trains its own length then (where an epoch's length is known), within what remains of the
    searcher's."""

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


class _FitTrial(TFKerasTrial):
    """The TFKerasTrial a script's fit() call stands for: the call's PEDL callbacks, and its
    Keras callbacks behind ``keras_callbacks`` (:class:`KerasCallbacks`, None: not called)."""

    def __init__(
        self,
        context: TFKerasTrialContext,
        call: FitCall,
        keras_callbacks: KerasCallbacks | None = None,
    ) -> None:
        super().__init__(context)
        self._call = call
        self._keras_callbacks = keras_callbacks
        context.configure_fit(**call.options)

    def build_model(self) -> keras.Model:
        return self._call.model

    def build_training_data_loader(self) -> Any:
        return self._wrap(self._call.training)

    def build_validation_data_loader(self) -> Any:
        return self._wrap(self._call.validation)

    def keras_callbacks(self) -> list[keras.callbacks.Callback]:
        own = [cb for cb in self._call.callbacks if isinstance(cb, Callback)]
        if self._keras_callbacks:
            own.append(self._keras_callbacks)
        return own

    def _wrap(self, data: Any) -> Any:
        if isinstance(data, tf.data.Dataset):
            return self.context.wrap_dataset(data)
        return data


class _HistoryWriter:
    """Forwards a stage's metrics to the trial's TrainContext, counted in the trial's batches
    (the stage's own plus ``offset``, those of the earlier stages), and keeps them for fit()'s
    History (:class:`~pedl.script._stages.EpochHistory`).

    Each row carries the trial's epochs (``total_epochs``): those of the earlier stages
    (``epoch_offset``) plus the stage's batches over its data's batches per epoch, so the
    trial's curves can be drawn over epochs; None where an epoch's length is not known (an
    endless dataset without ``steps_per_epoch``, in this stage or an earlier one).

    With a :class:`DeterminedCallback` in the call, the metrics are also reported under the
    names Determined 0.38's callback reports (``keras.callbacks.Callback.on_test_end``'s logs):
    validation metrics without the ``val_`` prefix (``categorical_accuracy``, as 0.38 configs'
    ``searcher.metric`` names them; the ``val_`` names stay too), and ``batches`` and
    ``epochs`` (the trained batches and epochs, as 0.38's callback adds them) in both kinds.
    """

    def __init__(
        self,
        train: core.TrainContext,
        *,
        determined: bool,
        batches_per_epoch: int | None,
        offset: int = 0,
        epoch_offset: float | None = 0.0,
    ) -> None:
        self._train = train
        self._determined = determined
        self._batches_per_epoch = batches_per_epoch
        self._offset = offset
        self._epoch_offset = epoch_offset
        self.history = EpochHistory(batches_per_epoch)

    def write_metrics(
        self,
        kind: MetricKind,
        total_batches: int,
        metrics: Mapping[str, float],
        total_epochs: float | None = None,
    ) -> None:
        if kind is MetricKind.VALIDATION:
            self.history.validation(total_batches, metrics)
        else:
            self.history.training(total_batches, metrics)
        epochs = _epochs(self._epoch_offset, total_batches, self._batches_per_epoch)
        total_batches += self._offset
        if self._determined:
            metrics = determined_names(kind, total_batches, metrics, self._batches_per_epoch)
        self._train.report(kind, total_batches, metrics, total_epochs=epochs)


def _epochs(offset: float | None, batches: int, batches_per_epoch: int | None) -> float | None:
    """``offset`` epochs and ``batches`` of ``batches_per_epoch``; None where either is not
    known."""
    if offset is None or not batches_per_epoch:
        return None
    return offset + batches / batches_per_epoch


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
        self._stage = 0
        """The number of fit calls so far: the index of the next stage."""
        self._offset = 0
        """The trial's batches trained by the stages before the current one."""
        self._epoch_offset: float | None = 0.0
        """The epochs (of each one's data) those stages trained; None where one's epoch
        length is not known."""
        self._stages: list[dict[str, Any]] = []
        """Each finished stage's trained batches, History and whether its end state was kept."""
        self._snapshots: dict[int, Path] = {}
        """The end states of the finished stages (see pedl.script._stages), by index."""
        self._resumed: dict[str, Any] | None = None
        """The stages of the checkpoint the trial resumes from (None: none, or one of a
        single-stage trial from before stages were recorded)."""
        self._scratch: Path | None = None
        self._resumed_batches = 0
        """The batches of the checkpoint resumed from, where it records no stages."""
        max_length = context.info.config.searcher_max_length
        self._lengths = None if max_length is None else SearcherLengths(context.searcher.session)

    @property
    def progressed(self) -> bool:
        if self._core_api is not None and self._core_api.used:
            return True
        return self._controller is not None and self._controller.progressed

    @property
    def progress(self) -> Any:
        """The counters of the current (or the latest) ``fit``: its ``batches`` are the
        trial's; None before the first ``fit``."""
        return None if self._controller is None else self._controller.progress

    def execute(self) -> TrialOutcome:
        """Run the entrypoint; return the outcome of its fit() calls, or, for a script that
        trains without fit() (Determined's Core API), that of its run (see
        :class:`~pedl.script._core_api.CoreApiRun`, whose context ``core.init()`` yields)."""
        # The script builds its model before PEDL sees it: seed first, so that its initial
        # weights are the trial seed's.
        set_random_seed(self._context.info.trial_seed)
        announce_mode()
        core_api = self._core_api = CoreApiRun(self._context)
        with tempfile.TemporaryDirectory(prefix="pedl-script-") as scratch:
            self._scratch = Path(scratch)
            self._read_resumed()
            info = self._context.info
            with (
                core_api.serving(),
                core.use_context(core_api.context),
                self._fit_intercepted(),
                trial_search(info.config, info.hparams),  # a KerasTuner search's trial
            ):
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
        if self._outcome is TrialOutcome.PREEMPTED:
            return self._outcome
        return self._final_outcome()

    def _final_outcome(self) -> TrialOutcome:
        """The trial's outcome once its script ended: COMPLETED where the searcher has no
        more length for it, else STOPPED_EARLY (its code decided: the script's fits
        trained their own lengths, or one stopped early)."""
        dist = self._context.distributed
        completed = self._lengths is not None and self._lengths.exhausted
        if dist.size > 1:  # only the chief asked the searcher
            completed = bool(dist.broadcast(completed if dist.is_chief else None))
        return TrialOutcome.COMPLETED if completed else TrialOutcome.STOPPED_EARLY

    def _read_resumed(self) -> None:
        latest = self._context.info.latest_checkpoint
        if latest is None:
            return
        assert self._scratch is not None
        with self._context.checkpoint.restore_path(latest) as path:
            self._resumed = read_state(path, self._scratch / "resumed")
            if self._resumed is None:  # a one-stage trial's checkpoint from before stages
                metadata = json.loads((path / core.METADATA_FILE).read_text())
                self._resumed_batches = int(metadata.get("steps_completed", 0))

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
            with other_keras_fit_refused(
                "keras" if LEGACY else "tf_keras", other_keras, ScriptError
            ):
                yield
        finally:
            keras.Model.fit = original

    def fit(self, model: keras.Model, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """The script's ``model.fit(*args, **kwargs)``: train it as the next stage of this
        trial (see :mod:`pedl.script._stages`)."""
        index = self._stage
        self._stage += 1
        call = parse_fit(model, args, kwargs, self._context.info.hparams)
        resumed = self._resumed
        if resumed is not None and index < resumed["stage"]:
            return self._replay(index, call, resumed["stages"][index])
        # The stage whose checkpoint the trial resumes from (the first, for one without
        # stages) resumes there, after the script's own code before it (its recompile).
        resumes_here = index == (0 if resumed is None else resumed["stage"])
        latest = self._context.info.latest_checkpoint if resumes_here else None
        history_writer = _HistoryWriter(
            self._context.train,
            determined=call.determined is not None,
            batches_per_epoch=call.steps_per_epoch or call.batches_per_epoch,
            offset=self._offset,
            epoch_offset=self._epoch_offset,
        )
        if latest is not None and resumed is not None:
            history_writer.history.load_state(resumed["history"])
        elif latest is not None:
            history_writer.history.start_at(self._resumed_batches)
        context = self._stage_context(index, call, history_writer, latest)
        if self._lengths is not None and not self._has_length_left():
            logger.info(
                "model.fit() call %d: the searcher's length is trained; it returns at once",
                index + 1,
            )
            self._outcome = TrialOutcome.COMPLETED
            self._stages.append({"batches": 0, "history": {}, "snapshot": False})
            return _history(model, {})
        per_epoch = call.steps_per_epoch or call.batches_per_epoch
        period = context.info.config.min_validation_period
        callbacks = KerasCallbacks(
            [cb for cb in call.callbacks if not isinstance(cb, Callback)],
            steps_per_epoch=per_epoch,
            epochs=call.epochs,
            verbose=call.options["verbose"],
            validation_period=_to_batches(
                period.unit, call, context.info.config.records_per_epoch, period.value
            )
            if period.value
            else 0,
            history=history_writer.history,
        )
        self._inside_fit = True
        try:
            self._controller = TFKerasTrialController(
                lambda trial_context: _FitTrial(trial_context, call, callbacks), context
            )
            try:
                self._outcome = self._controller.run()
            except BaseException:
                callbacks.suspend()  # the trial restarts from its checkpoint, in a new run
                raise
            if self._outcome is TrialOutcome.PREEMPTED:
                callbacks.suspend()
            else:
                callbacks.end()
        finally:
            self._inside_fit = False
        if self._outcome is TrialOutcome.PREEMPTED:
            raise _Preempted
        batches = self._controller.progress.batches
        history = history_writer.history.finish(batches)
        self._snapshots[index] = self._save_end_state(index, model, callbacks)
        self._stages.append({"batches": batches, "history": history, "snapshot": True})
        self._count_on(call, batches)
        return _history(model, history)

    def _count_on(self, call: FitCall, batches: int) -> None:
        """The next stage counts on after ``batches`` of ``call`` (a finished stage)."""
        self._offset += batches
        self._epoch_offset = _epochs(
            self._epoch_offset, batches, call.steps_per_epoch or call.batches_per_epoch
        )

    def _has_length_left(self) -> bool:
        """Whether the searcher has a length left to train (asked by the chief)."""
        assert self._lengths is not None
        dist = self._context.distributed
        left = not dist.is_chief or self._lengths.target() is not None
        if dist.size > 1:
            left = bool(dist.broadcast(left if dist.is_chief else None))
        return left

    def _stage_context(
        self, index: int, call: FitCall, writer: _HistoryWriter, latest: str | None
    ) -> core.Context:
        """The core context of stage ``index``: its own batches, the trial's counted on."""
        context = self._trial_context(call, writer, latest, first=index == 0)
        own: int | None = None
        if self._lengths is None:
            own = call.length_in_batches()
            logger.info(
                "searcher.max_length is not set: model.fit() call %d trains for its own length "
                "(%d batches)",
                index + 1,
                own,
            )
        elif call.epochs_given and (call.steps_per_epoch or call.batches_per_epoch):
            own = call.length_in_batches()
        info = context.info
        lengths = StageLengths(
            self._lengths,
            offset=self._offset,
            own=own,
            to_batches=functools.partial(
                _to_batches, info.config.searcher_unit, call, info.config.records_per_epoch
            ),
        )
        # Where the searcher decides (max_length), its lengths are the chief's, broadcast.
        distributed = None if self._lengths is None else self._context.distributed
        checkpoints = StageCheckpoints(
            self._context.checkpoint,
            stage=index,
            offset=self._offset,
            write_state=lambda path: write_state(
                path,
                stage=index,
                offset=self._offset,
                stages=self._stages,
                snapshots=self._snapshots,
                history=writer.history,
            ),
        )
        return dataclasses.replace(
            context,
            searcher=core.SearcherContext(lengths, "batches", distributed),
            checkpoint=checkpoints,
        )

    def _replay(self, index: int, call: FitCall, stage: dict[str, Any]) -> Any:
        """A fit call of a stage the trial finished before it resumed: the model (with its
        optimizer) and the random generators get the state they had when it returned, and
        it returns the History it returned then."""
        logger.info(
            "model.fit() call %d: trained before the trial resumed (%d batches); its end state "
            "restored",
            index + 1,
            stage["batches"],
        )
        if stage["snapshot"]:
            assert self._scratch is not None
            directory = self._scratch / "resumed" / snapshot_dir(index)
            writer = _HistoryWriter(self._context.train, determined=False, batches_per_epoch=None)
            context = self._trial_context(call, writer, None, first=False)
            self._inside_fit = True
            try:
                controller = TFKerasTrialController(
                    lambda trial_context: _FitTrial(trial_context, call), context
                )
                scope = (
                    controller.strategy.scope()
                    if controller.strategy is not None
                    else contextlib.nullcontext()
                )
                with scope:
                    build_variables(controller.model, controller.train_data.first_batch())
                _state.restore_variables(_state.model_variables(controller.model), directory)
                _state.restore_lookup_tables(controller.model, directory)
                _state.restore_rng(directory)
            finally:
                self._inside_fit = False
            ended = directory / _CALLBACKS_FILE
            if ended.exists():
                with open(ended, "rb") as f:
                    states = pickle.load(f)
                restore_ended([cb for cb in call.callbacks if not isinstance(cb, Callback)], states)
            self._snapshots[index] = directory
        self._stages.append(stage)
        self._count_on(call, stage["batches"])
        return _history(call.model, stage["history"])

    def _save_end_state(self, index: int, model: keras.Model, callbacks: KerasCallbacks) -> Path:
        """Keep the state the script sees when stage ``index``'s fit returns (its Keras
        callbacks' too), for the checkpoints of the later stages."""
        assert self._scratch is not None
        directory = self._scratch / "ended" / snapshot_dir(index)
        directory.mkdir(parents=True)
        _state.save_variables(_state.model_variables(model), directory)
        _state.save_lookup_tables(model, directory)
        _state.save_rng(directory)
        with open(directory / _CALLBACKS_FILE, "wb") as f:
            pickle.dump(callbacks.callback_states(), f)
        return directory

    def _trial_context(
        self, call: FitCall, writer: _HistoryWriter, latest: str | None, *, first: bool
    ) -> core.Context:
        """The trial's context as the TFKerasTrial of ``call`` needs it: the fit's batch size
        as ``global_batch_size``, DeterminedCallback's options applied, metrics recorded,
        ``latest`` the checkpoint to resume from. Only the first stage warm-starts and
        validates first (``perform_initial_validation``)."""
        info = self._context.info
        config = info.config
        warm_start = info.warm_start_checkpoint if first else None
        if not first and config.perform_initial_validation:
            config = config.model_copy(update={"perform_initial_validation": False})
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
            if determined.checkpoint and first and latest is None and warm_start is None:
                warm_start = determined.checkpoint
            metric = config.searcher.metric
            if not metric.startswith("val_"):
                # 0.38's callback reports validation metrics without the prefix (see
                # _HistoryWriter); the controller names them val_*.
                searcher = config.searcher.model_copy(update={"metric": f"val_{metric}"})
                config = config.model_copy(update={"searcher": searcher})
        per_epoch = call.steps_per_epoch or call.batches_per_epoch
        if config.min_validation_period.value == 0 and per_epoch:
            # Keras validates every validation_freq epochs (each epoch by default), and so
            # does the trial where its config sets no validation period of its own.
            period = Length(unit="batches", value=call.validation_freq * per_epoch)
            config = config.model_copy(update={"min_validation_period": period})
        info = dataclasses.replace(
            info,
            hparams={**info.hparams, "global_batch_size": call.batch_size},
            config=config,
            latest_checkpoint=latest,
            warm_start_checkpoint=warm_start,
        )
        train = core.TrainContext(writer, is_chief=self._context.distributed.is_chief)
        return dataclasses.replace(self._context, info=info, train=train)


def _history(model: keras.Model, metrics: Mapping[str, list[float]]) -> Any:
    """A Keras ``History`` of ``metrics`` (one value per epoch), as fit returns it."""
    history = keras.callbacks.History()
    history.set_model(model)
    history.history = {name: list(values) for name, values in metrics.items()}
    history.epoch = list(range(max((len(v) for v in metrics.values()), default=0)))
    return history


def _to_batches(unit: str, call: FitCall, records_per_epoch: int, length: int) -> int:
    """A searcher length (in ``unit``) in batches of the stage's batch size; epochs of the
    call's data where the config gives no ``records_per_epoch``."""
    if unit == "epochs" and records_per_epoch <= 0:
        per_epoch = call.steps_per_epoch or call.batches_per_epoch
        if per_epoch:
            return length * per_epoch
    return Length(unit=unit, value=length).to_batches(  # type: ignore[arg-type]
        call.batch_size, records_per_epoch
    )


def parse_fit(
    model: keras.Model, args: tuple[Any, ...], kwargs: dict[str, Any], hparams: Mapping[str, Any]
) -> FitCall:
    """Read a ``model.fit`` call's arguments as PEDL trains them (see :class:`FitCall`)."""
    try:
        bound = _FIT_SIGNATURE.bind(model, *args, **kwargs)
    except TypeError as e:
        raise ScriptError(f"model.fit() was called with arguments Keras does not take: {e}") from e
    given = set(bound.arguments)
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
    epochs_given = "epochs" in given
    ignored = [f"{name}={a[name]!r}" for name in ("initial_epoch",) if a[name] != 0]
    if ignored:
        logger.info("model.fit(%s): not used; PEDL counts the trial's batches", ", ".join(ignored))
    epochs, steps, frequency = a["epochs"], a["steps_per_epoch"], a["validation_freq"]
    for name, value in (
        ("epochs", epochs),
        ("steps_per_epoch", steps),
        ("validation_freq", frequency),
    ):
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
        validation_freq=frequency,
        epochs_given=epochs_given,
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
