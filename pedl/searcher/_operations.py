"""The operations a search method asks for (Determined's names and signatures), and their
JSON form."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

from pedl.searcher._errors import SearcherError


@dataclass(frozen=True)
class TrialCheckpoint:
    """The checkpoint trial ``request_id`` holds at ``length`` (absolute, in the searcher's
    unit), as a :class:`Create`'s ``checkpoint``: the new trial is a copy of that trial
    (population-based training). The engine creates it once that checkpoint exists (a
    trial that trained on past ``length`` without one is first asked to store it there),
    and records the trial it copies and the hyperparameters that differ (its lineage)."""

    request_id: uuid.UUID
    length: int


@dataclass(frozen=True)
class Create:
    """Create a trial with these hyperparameters, known to the search method as
    ``request_id``.

    ``checkpoint``: start the trial from this checkpoint's weights (a warm start): a
    checkpoint's uuid, or any object with a ``uuid`` attribute (such as the SDK's
    ``Checkpoint``, or Determined's), or a :class:`TrialCheckpoint` (a copy of another
    trial of the search). ``None``: from scratch.
    """

    request_id: uuid.UUID
    hparams: dict[str, Any] = field(hash=False)
    checkpoint: Any = field(default=None, hash=False)

    @property
    def checkpoint_uuid(self) -> str | None:
        """The uuid of :attr:`checkpoint` as a string, or ``None`` (also for a
        :class:`TrialCheckpoint`: see :attr:`parent`)."""
        if self.checkpoint is None or isinstance(self.checkpoint, TrialCheckpoint):
            return None
        return str(getattr(self.checkpoint, "uuid", self.checkpoint))

    @property
    def parent(self) -> TrialCheckpoint | None:
        """The trial this one copies, when :attr:`checkpoint` is a :class:`TrialCheckpoint`."""
        return self.checkpoint if isinstance(self.checkpoint, TrialCheckpoint) else None


@dataclass(frozen=True)
class ValidateAfter:
    """Train trial ``request_id`` to the ABSOLUTE ``length``, then validate it.

    ``length`` is counted in the searcher's unit (``max_length``'s: batches, records or
    epochs). The search method hears of the result through ``on_validation_completed``.
    """

    request_id: uuid.UUID
    length: int


@dataclass(frozen=True)
class Close:
    """No more work for trial ``request_id``: stop it once its queued operations are done;
    ``on_trial_closed`` follows."""

    request_id: uuid.UUID


@dataclass(frozen=True)
class Progress:
    """Report the search's progress (0.0 to 1.0) ahead of the next :meth:`progress` call."""

    progress: float


@dataclass(frozen=True)
class Shutdown:
    """The search is over. ``failure``: it failed (e.g. every trial errored); ``cancel``: it
    was cancelled rather than completed."""

    cancel: bool = False
    failure: bool = False


Operation = Create | ValidateAfter | Close | Progress | Shutdown


def operation_to_dict(op: Operation) -> dict[str, Any]:
    """Return a JSON-able record of ``op``; :func:`operation_from_dict` inverts it (a
    ``Create``'s checkpoint becomes its uuid)."""
    match op:
        case Create():
            parent = op.parent
            return {
                "type": "create",
                "request_id": str(op.request_id),
                "hparams": op.hparams,
                "checkpoint": (
                    op.checkpoint_uuid
                    if parent is None
                    else {"request_id": str(parent.request_id), "length": parent.length}
                ),
            }
        case ValidateAfter():
            return {"type": "validate_after", "request_id": str(op.request_id), "length": op.length}
        case Close():
            return {"type": "close", "request_id": str(op.request_id)}
        case Progress():
            return {"type": "progress", "progress": op.progress}
        case Shutdown():
            return {"type": "shutdown", "cancel": op.cancel, "failure": op.failure}
    raise SearcherError(f"Not a searcher operation: {op!r}")


def operation_from_dict(record: dict[str, Any]) -> Operation:
    """Rebuild an operation from :func:`operation_to_dict`'s record."""
    kind = record.get("type")
    try:
        if kind == "create":
            checkpoint = record.get("checkpoint")
            if isinstance(checkpoint, dict):
                checkpoint = TrialCheckpoint(
                    uuid.UUID(str(checkpoint["request_id"])), int(checkpoint["length"])
                )
            return Create(uuid.UUID(str(record["request_id"])), dict(record["hparams"]), checkpoint)
        if kind == "validate_after":
            return ValidateAfter(uuid.UUID(str(record["request_id"])), int(record["length"]))
        if kind == "close":
            return Close(uuid.UUID(str(record["request_id"])))
        if kind == "progress":
            return Progress(float(record["progress"]))
        if kind == "shutdown":
            return Shutdown(bool(record["cancel"]), bool(record["failure"]))
    except (KeyError, TypeError, ValueError) as e:
        raise SearcherError(f"Malformed operation record {record!r}: {e}") from e
    raise SearcherError(f"Unknown operation type {kind!r} in {record!r}")
