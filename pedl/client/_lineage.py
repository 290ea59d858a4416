"""A trial's lineage: the trial it copies in a population-based training search (``pbt``),
the checkpoint it started from and the hyperparameters it changed."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class TrialLineage:
    """Where a copy came from: ``parent_trial_id``'s checkpoint ``parent_checkpoint_uuid``
    (at batch ``parent_batches``), with ``changed_hparams`` (dotted names) as
    ``{name: (parent's value, this trial's value)}``."""

    parent_trial_id: int
    parent_checkpoint_uuid: str | None
    parent_batches: int | None
    changed_hparams: dict[str, tuple[Any, Any]] = field(default_factory=dict)

    def describe(self) -> list[str]:
        """The lineage in lines of text (what ``pedl trial describe`` prints)."""
        where = self.parent_checkpoint_uuid or "no checkpoint"
        if self.parent_batches is not None:
            where += f" at batch {self.parent_batches}"
        lines = [f"copy of trial {self.parent_trial_id} (from {where})"]
        if not self.changed_hparams:
            lines.append("hyperparameters unchanged")
        for name, (before, after) in self.changed_hparams.items():
            lines.append(f"{name}: {before!r} -> {after!r}")
        return lines


def lineage_of(record: Mapping[str, Any]) -> TrialLineage | None:
    """The lineage in a trial's API record (``TrialPublic``), or ``None`` for a trial that
    copies no other."""
    parent = record.get("parent_trial_id")
    if parent is None:
        return None
    changed = record.get("changed_hparams") or {}
    return TrialLineage(
        parent_trial_id=int(parent),
        parent_checkpoint_uuid=record.get("warm_start_checkpoint_uuid"),
        parent_batches=record.get("parent_batches"),
        changed_hparams={
            str(name): (value.get("from"), value.get("to"))
            for name, value in changed.items()
            if isinstance(value, Mapping)
        },
    )
