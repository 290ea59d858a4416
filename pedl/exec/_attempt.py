"""One attempt at a trial: load the model definition, build its controller, run it, and say
how it ended (a :class:`~pedl.vocabulary.TrialOutcome`, with a :class:`~pedl.vocabulary.TrialError`
when it errored).

Shared by the trial process (which reports the result to the master) and local mode (which
hands it to its in-process engine). Nothing here prints: the caller decides what to show.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pedl import core, model_def
from pedl._keras2_hint import keras2_only_api
from pedl.exec._master_client import MasterError
from pedl.script import trial_class_of
from pedl.vocabulary import InvalidHP, TrialError, TrialOutcome, user_location

Stage = Literal["load", "build", "train"]
"""Where an attempt ended: loading the model definition, building the controller (the
trial's ``__init__``, ``build_model``, data loaders), or training (``run``)."""

FRAMEWORK_MODULES = frozenset({"tensorflow", "keras", "tf_keras"})
"""Top-level modules whose absence means the framework extra is not installed."""

FRAMEWORK_INSTALL = "pip install 'pedl[tf]'"


@dataclass(frozen=True)
class AttemptResult:
    """How an attempt ended.

    ``error`` is set for ERRORED (what went wrong and where) and INVALID_HP (the rejection);
    ``stage`` says where the attempt ended: ``"load"`` means the model definition could not be
    loaded, which no restart fixes.
    """

    outcome: TrialOutcome
    error: TrialError | None = None
    stage: Stage = "train"


def run_attempt(
    code_dir: str | Path,
    entrypoint: str | None,
    build_context: Callable[[], core.Context],
) -> AttemptResult:
    """Load the model definition in ``code_dir``, build its Trial's controller on the context
    ``build_context()`` returns, run it, and classify how it ended.

    - the controller returns: its outcome (COMPLETED, PREEMPTED or STOPPED_EARLY);
    - :class:`pedl.InvalidHP` raised anywhere (model definition import, ``__init__``,
      ``build_model``, data loaders, training; also when another exception was raised from
      it): INVALID_HP;
    - any other ``Exception``: ERRORED, with a :class:`TrialError` whose location is the
      innermost frame under ``code_dir`` and whose ``before_progress`` says no training batch
      completed in this run. A model definition that cannot be loaded (syntax error, missing
      package, no Trial class) is described by its underlying error; a missing framework
      (TensorFlow, Keras) says what to install.

    :class:`pedl.exec.MasterError` (the master is gone or revoked this process),
    ``KeyboardInterrupt`` and ``SystemExit`` propagate.
    """
    code_dir = Path(code_dir)
    user_dir = code_dir if code_dir.is_dir() else code_dir.parent
    stage: Stage = "load"
    controller: Any = None
    try:
        definition = model_def.load(code_dir, entrypoint)
        trial_class = trial_class_of(definition)
        if trial_class is None:
            raise model_def.ModelDefError(
                f"the model definition (entrypoint {entrypoint!r}) has no Trial class"
            )
        controller_class = trial_class.trial_controller_class
        if controller_class is None:
            raise model_def.ModelDefError(
                f"{trial_class.__qualname__} subclasses pedl.Trial directly; subclass a "
                "framework's Trial class instead (e.g. pedl.keras.TFKerasTrial)"
            )
        stage = "build"
        context = build_context()
        controller = controller_class.from_definition(definition, context)
        stage = "train"
        outcome = TrialOutcome(controller.run())
    except MasterError:
        raise
    except Exception as error:
        progressed = bool(getattr(controller, "progressed", False))
        return classify_failure(
            error,
            code_dir=user_dir,
            progressed=progressed,
            stage=stage,
            batches=_batches_trained(controller),
        )
    return AttemptResult(outcome, None, stage)


def classify_failure(
    error: BaseException,
    *,
    code_dir: str | Path | None,
    progressed: bool = False,
    stage: Stage = "train",
    batches: int | None = None,
) -> AttemptResult:
    """The result of an attempt that raised ``error`` (see :func:`run_attempt`); ``batches``:
    how many the trial had trained then, when known."""
    invalid = _find(error, lambda e: isinstance(e, InvalidHP))
    if invalid is not None:
        return AttemptResult(
            TrialOutcome.INVALID_HP,
            TrialError.from_exception(invalid, code_dir=code_dir, before_progress=not progressed),
            stage,
        )
    missing = _find(error, _is_missing_framework)
    if missing is not None:
        described = TrialError.from_exception(missing, code_dir=code_dir, before_progress=True)
        message = (
            f"{described.message}: this trial needs TensorFlow and Keras, which are not "
            f"installed; install them with: {FRAMEWORK_INSTALL}"
        )
        return AttemptResult(
            TrialOutcome.ERRORED,
            TrialError(
                type=described.type,
                message=message,
                location=described.location or user_location(error, code_dir),
                before_progress=True,
                traceback=described.traceback,
            ),
            stage,
        )
    keras2 = _find(error, lambda e: keras2_only_api(e) is not None)
    if keras2 is not None:
        # Keras 2 code under Keras 3: one line saying how to switch, at the user's line.
        described = TrialError.from_exception(keras2, code_dir=code_dir, before_progress=True)
        return AttemptResult(
            TrialOutcome.ERRORED,
            dataclasses.replace(
                described,
                message=str(keras2_only_api(keras2)),
                location=described.location or user_location(error, code_dir),
            ),
            stage,
        )
    cause = error.__cause__
    if (
        isinstance(error, model_def.ModelDefError)
        and cause is not None
        and user_location(cause, code_dir) is not None
    ):
        # The user's code failed to import (a syntax error, a missing package): describe
        # that error; the loader's message only repeats it with its traceback.
        return AttemptResult(
            TrialOutcome.ERRORED,
            TrialError.from_exception(cause, code_dir=code_dir, before_progress=True),
            stage,
        )
    return AttemptResult(
        TrialOutcome.ERRORED,
        TrialError.from_exception(
            error,
            code_dir=code_dir,
            before_progress=stage == "load" or not progressed,
            batches=batches,
        ),
        stage,
    )


def _batches_trained(controller: Any) -> int | None:
    """The batches a framework controller had trained (its ``progress``), or None where it
    keeps no such count or had not built it."""
    batches = getattr(getattr(controller, "progress", None), "batches", None)
    return batches if isinstance(batches, int) and not isinstance(batches, bool) else None


def _is_missing_framework(error: BaseException) -> bool:
    if not isinstance(error, ModuleNotFoundError) or not error.name:
        return False
    return error.name.partition(".")[0] in FRAMEWORK_MODULES


def _find(error: BaseException, predicate: Callable[[BaseException], bool]) -> BaseException | None:
    """The first of ``error`` and the errors it was raised from (``__cause__``, or else
    ``__context__``) that ``predicate`` accepts."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        if predicate(current):
            return current
        seen.add(id(current))
        current = current.__cause__ if current.__cause__ is not None else current.__context__
    return None
