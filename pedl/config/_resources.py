"""The ``resources`` section: slots and scheduling weight of each trial."""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import Field

from pedl.config._base import ConfigModel
from pedl.config._limits import MAX_SLOTS


class ResourcesConfig(ConfigModel):
    """How many slots a trial uses and how the experiment competes for slots.

    ``slots_per_trial`` > 1 makes each trial a distributed job. ``max_slots`` caps the
    experiment's slots (``None``: no cap). ``priority`` (1..99, lower is more urgent) and
    ``weight`` (fair share) steer the scheduler. Determined's other keys are accepted so
    that its configs load; PEDL ignores ``resource_pool``, ``slots``, ``shm_size``,
    ``devices``, ``agent_label``, ``native_parallel`` and ``is_single_node``.
    """

    ignored_fields: ClassVar[frozenset[str]] = frozenset(
        {
            "resource_pool",
            "slots",
            "shm_size",
            "devices",
            "agent_label",
            "native_parallel",
            "is_single_node",
        }
    )

    slots_per_trial: int = Field(default=1, ge=0, le=MAX_SLOTS)
    max_slots: int | None = Field(default=None, ge=1, le=MAX_SLOTS)
    priority: int | None = Field(default=None, ge=1, le=99)
    weight: float = Field(default=1.0, ge=0)
    resource_pool: str = ""
    slots: int | None = None
    shm_size: int | str | None = None
    devices: list[Any] = Field(default_factory=list)
    agent_label: str | None = None
    native_parallel: bool = False
    is_single_node: bool = False
