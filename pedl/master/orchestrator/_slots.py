"""The master's one agent and its slots: which are disabled (``det agent disable``, ``det
slot disable``), which trial holds each slot, and which running trials must stop because
their slots were disabled without ``--drain``.

A PEDL master is its own one agent, :data:`AGENT_ID`, with ``total_slots`` slots numbered
from 0. A disabled slot takes no new trial; a disabled agent takes none at all. Disabled
with ``drain``, the trials running there finish (or stop by themselves) as they would;
without it they are told to checkpoint and stop (preempted), and wait QUEUED to run again
from that checkpoint once slots are enabled. Where the resource manager places trials on
particular slots (GPUs) it says which; otherwise the slots are numbered here, the lowest
enabled free ones first.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from pedl.db.agents import WHOLE_AGENT

AGENT_ID = "master"
"""The one agent of a PEDL master: itself."""


def agent_disabled_reason(draining: bool) -> str:
    """Why no trial starts while the agent is disabled."""
    how = " (draining)" if draining else ""
    return f"the agent {AGENT_ID!r} is disabled{how}: `det agent enable {AGENT_ID}` enables it"


@dataclass(frozen=True)
class SlotState:
    """One slot as ``GET /agents`` shows it."""

    slot_id: int
    enabled: bool
    draining: bool
    """Disabled with ``drain``: a trial running there may finish."""
    trial_id: int | None
    """The trial that holds it now, if any."""


class SlotBook:
    """The disabled slots and the trials holding slots (not thread-safe: the orchestrator's
    lock guards it)."""

    def __init__(self) -> None:
        self.disabled: dict[int, bool] = {}
        """Disabled slot (:data:`~pedl.db.agents.WHOLE_AGENT`: the agent) -> drains."""
        self._owners: dict[int, int] = {}

    @property
    def agent_enabled(self) -> bool:
        return WHOLE_AGENT not in self.disabled

    @property
    def agent_draining(self) -> bool:
        return self.disabled.get(WHOLE_AGENT, False)

    def set_disabled(self, disabled: Mapping[int, bool]) -> None:
        self.disabled = dict(disabled)

    def disabled_slots(self, total: int) -> frozenset[int]:
        """The slots that take no new trial: all of them while the agent is disabled."""
        if not self.agent_enabled:
            return frozenset(range(total))
        return frozenset(s for s in self.disabled if 0 <= s < total)

    def idle_disabled(self, total: int) -> int:
        """How many disabled slots no trial holds (the others count as used already)."""
        return sum(1 for s in self.disabled_slots(total) if s not in self._owners)

    def assign(self, trial_id: int, count: int, total: int, given: list[int] | None) -> None:
        """Record the slots a started trial holds: ``given`` by the resource manager, else
        the lowest enabled free ones (then disabled free ones, should too few be left)."""
        if given is None:
            disabled = self.disabled_slots(total)
            free = [s for s in range(total) if s not in self._owners]
            given = sorted(free, key=lambda s: (s in disabled, s))[:count]
        for slot in given:
            self._owners[slot] = trial_id

    def release(self, trial_id: int) -> None:
        """The trial's process ended: its slots are free."""
        for slot in [s for s, t in self._owners.items() if t == trial_id]:
            del self._owners[slot]

    def to_stop(self, running: Iterable[int]) -> set[int]:
        """The running trials that must stop: every one while the agent is disabled without
        drain, else those holding a slot disabled without drain."""
        running = set(running)
        if not self.agent_enabled:
            return set() if self.agent_draining else running
        stopping = {self._owners.get(s) for s, drain in self.disabled.items() if not drain}
        return {t for t in stopping if t is not None and t in running}

    def states(self, total: int) -> list[SlotState]:
        agent_draining = not self.agent_enabled and self.agent_draining
        return [
            SlotState(
                slot_id=slot,
                enabled=self.agent_enabled and slot not in self.disabled,
                draining=agent_draining or self.disabled.get(slot, False),
                trial_id=self._owners.get(slot),
            )
            for slot in range(total)
        ]
