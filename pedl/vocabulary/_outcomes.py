"""How a trial ended, and why it failed when it did.

One vocabulary for every side: the harness reports a :class:`TrialOutcome` (with a
:class:`TrialError` when it errored), the engine acts on it, the stores keep it on the
trial, the API returns it, and the CLI and SDK show it.
"""

from __future__ import annotations

import os
import traceback
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

MAX_ERROR_MESSAGE = 4_000
MAX_TRACEBACK = 32_000


class InvalidHP(Exception):
    """Raise from a trial (``__init__``, ``build_model``, a data loader or during training)
    to reject its hyperparameters: the trial ends ``INVALID_HP`` and is not retried; a random
    search replaces it with a new sample, a grid search marks that point invalid."""


class TrialOutcome(StrEnum):
    """How one run of a trial ended."""

    COMPLETED = "COMPLETED"
    """The searcher has no more work for the trial."""
    STOPPED_EARLY = "STOPPED_EARLY"
    """User code stopped training (``model.stop_training``, a context stop request)."""
    STOPPED_BY_SEARCHER = "STOPPED_BY_SEARCHER"
    """The searcher closed the trial before it trained to the search's ``max_length`` (an
    adaptive search's trial not promoted past a rung: Optuna's "pruned")."""
    INVALID_HP = "INVALID_HP"
    """User code raised :class:`InvalidHP`."""
    ERRORED = "ERRORED"
    """User code raised, or the process died; see :class:`TrialError`."""
    KILLED = "KILLED"
    """A user killed the trial or its experiment."""
    PREEMPTED = "PREEMPTED"
    """Asked to stop (pause, cancel, shutdown): checkpointed, to be resumed."""

    @property
    def is_final(self) -> bool:
        """Whether the trial will not run again after this outcome."""
        return self is not TrialOutcome.PREEMPTED


@dataclass(frozen=True)
class TrialError:
    """Why a trial errored: what a user needs to find the problem without reading logs.

    ``location`` is the innermost frame in the user's model definition (``file.py:LINE``
    relative to it), or None when no frame of theirs is on the stack. ``before_progress``
    says the error came before the first training batch completed (model definition import,
    ``__init__``, ``build_model``, data loaders, the first batch): such an error happens
    again on every attempt, so the trial is not restarted. ``batches`` is how many batches
    the trial had trained when it was raised (None: not known): a restarted trial resumes
    exactly, so the same error at the same batch again would recur on every restart
    (:meth:`recurs`); ``recurred`` marks the error that ended a trial for that reason.
    """

    type: str
    message: str
    location: str | None = None
    before_progress: bool = False
    traceback: str = ""
    batches: int | None = None
    recurred: bool = False

    @classmethod
    def from_exception(
        cls,
        error: BaseException,
        *,
        code_dir: str | Path | None,
        before_progress: bool,
        batches: int | None = None,
    ) -> TrialError:
        """Describe ``error``; frames under ``code_dir`` count as the user's code."""
        return cls(
            type=type(error).__name__,
            message=str(error)[:MAX_ERROR_MESSAGE],
            location=user_location(error, code_dir),
            before_progress=before_progress,
            traceback="".join(traceback.format_exception(error))[-MAX_TRACEBACK:],
            batches=batches,
        )

    def recurs(self, earlier: TrialError | None) -> bool:
        """Whether this error repeats ``earlier`` (the trial's error before its restart):
        the same type, message and place in the user's code, at the same known batch. A
        trial resumes exactly from its checkpoint, so such an error is the data's or the
        code's and would come again on every restart."""
        return (
            earlier is not None
            and self.batches is not None
            and (self.type, self.message, self.location, self.batches)
            == (earlier.type, earlier.message, earlier.location, earlier.batches)
        )

    def summary(self) -> str:
        """One line: ``ValueError: bad shape (model_def.py:42)``."""
        text = f"{self.type}: {self.message}" if self.message else self.type
        return f"{text} ({self.location})" if self.location else text

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TrialError:
        return cls(
            type=str(data.get("type", "Error")),
            message=str(data.get("message", "")),
            location=data.get("location") or None,
            before_progress=bool(data.get("before_progress", False)),
            traceback=str(data.get("traceback", "")),
            batches=_count(data.get("batches")),
            recurred=bool(data.get("recurred", False)),
        )


def user_location(error: BaseException, code_dir: str | Path | None) -> str | None:
    """``file.py:LINE`` of the innermost frame of ``error`` (or of the errors it was raised
    from) whose file lies under ``code_dir``."""
    if code_dir is None:
        return None
    root = os.path.realpath(code_dir)
    seen: set[int] = set()
    current: BaseException | None = error
    found: str | None = None
    while current is not None and id(current) not in seen and found is None:
        seen.add(id(current))
        frames = traceback.extract_tb(current.__traceback__)
        if isinstance(current, SyntaxError) and current.filename:
            frames.append(traceback.FrameSummary(current.filename, current.lineno or 0, "<module>"))
        for frame in reversed(frames):
            path = os.path.realpath(frame.filename)
            if path == root or path.startswith(root + os.sep):
                found = f"{os.path.relpath(path, root)}:{frame.lineno}"
                break
        current = current.__cause__ or current.__context__
    return found


def searcher_metric_of(metadata: Mapping[str, Any], metric: str) -> float | None:
    """The searcher metric of the validation a checkpoint follows, from its metadata."""
    validation = metadata.get("validation_metrics")
    value = validation.get(metric) if isinstance(validation, Mapping) else None
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def _count(value: Any) -> int | None:
    """A stored batch count, or None (absent, or not a count)."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None
