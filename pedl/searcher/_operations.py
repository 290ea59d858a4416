"""The operations a searcher asks for, and their JSON form."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pedl.searcher._errors import SearcherError


@dataclass(frozen=True)
class Create:
    """Create a trial with these hyperparameters and this seed, known as ``request_id``."""

    request_id: int
    hparams: dict[str, Any] = field(hash=False)
    trial_seed: int


@dataclass(frozen=True)
class ValidateAfter:
    """Train trial ``request_id`` to the ABSOLUTE ``length``, then validate it.

    ``length`` is counted in the unit of ``config.searcher.max_length`` (batches, records or
    epochs). The searcher hears of the result through ``on_validation_completed``.
    """

    request_id: int
    length: int


@dataclass(frozen=True)
class Close:
    """The searcher has no more work for trial ``request_id``: stop it once its queued
    operations are done, and report ``on_trial_closed``."""

    request_id: int


@dataclass(frozen=True)
class Shutdown:
    """The search is over. ``failure``: every trial errored; ``cancel``: the search was
    cancelled rather than completed."""

    failure: bool = False
    cancel: bool = False


Operation = Create | ValidateAfter | Close | Shutdown


def operation_to_dict(op: Operation) -> dict[str, Any]:
    """Return a JSON-able record of ``op``; :func:`operation_from_dict` inverts it."""
    match op:
        case Create():
            return {
                "type": "create",
                "request_id": op.request_id,
                "hparams": op.hparams,
                "trial_seed": op.trial_seed,
            }
        case ValidateAfter():
            return {"type": "validate_after", "request_id": op.request_id, "length": op.length}
        case Close():
            return {"type": "close", "request_id": op.request_id}
        case Shutdown():
            return {"type": "shutdown", "failure": op.failure, "cancel": op.cancel}
    raise SearcherError(f"Not a searcher operation: {op!r}")


def operation_from_dict(record: dict[str, Any]) -> Operation:
    """Rebuild an operation from :func:`operation_to_dict`'s record."""
    kind = record.get("type")
    try:
        if kind == "create":
            return Create(
                int(record["request_id"]), dict(record["hparams"]), int(record["trial_seed"])
            )
        if kind == "validate_after":
            return ValidateAfter(int(record["request_id"]), int(record["length"]))
        if kind == "close":
            return Close(int(record["request_id"]))
        if kind == "shutdown":
            return Shutdown(bool(record["failure"]), bool(record["cancel"]))
    except (KeyError, TypeError, ValueError) as e:
        raise SearcherError(f"Malformed operation record {record!r}: {e}") from e
    raise SearcherError(f"Unknown operation type {kind!r} in {record!r}")
