"""``/api/v1/agents``: the master's one agent (itself, ``master``) and its slots, and
disabling or enabling them (``det agent disable|enable``, ``det slot disable|enable``), as
Determined's ``/api/v1/agents/{agentId}/enable|disable`` and
``/api/v1/agents/{agentId}/slots/{slotId}/enable|disable``.

Any signed-in user reads them; administrators disable and enable (403 otherwise). A disabled
slot takes no new trial; a disabled agent takes none at all. Without ``drain``, the trials
running on what is disabled are told to checkpoint and stop (preempted: they wait QUEUED and
run again from that checkpoint once slots are free; a trial that has not stopped within two
minutes is killed, and runs again from its latest checkpoint without spending a restart);
with ``drain`` they go on until they end. The settings are kept in the database: a master
that restarts keeps them. A disabled slot that a trial holds still counts as used.
"""

from __future__ import annotations

import platform
from datetime import datetime
from pathlib import Path
from typing import Annotated, Literal

from fastapi import APIRouter, Body, Depends, Request
from fastapi import Path as PathParam
from pydantic import BaseModel, ConfigDict, Field

from pedl import __version__
from pedl.db import Database
from pedl.db import agents as agents_repo
from pedl.master.api._auth import USER_AUTH_RESPONSES, AdminUser, require_admin, require_user
from pedl.master.api._deps import DatabaseDep
from pedl.master.api._errors import ERROR_RESPONSES, ApiError
from pedl.master.orchestrator import AGENT_ID, Orchestrator

router = APIRouter(prefix="/agents", responses={**ERROR_RESPONSES, **USER_AUTH_RESPONSES})
"""Included by :mod:`.cluster`'s router (its tag and sign-in)."""

AgentId = Annotated[str, PathParam(max_length=128, description="The agent: `master`.")]
SlotId = Annotated[int, PathParam(ge=0, le=1_000_000, description="The slot, from 0.")]


class SlotPublic(BaseModel):
    """One slot of the agent."""

    model_config = ConfigDict(json_schema_serialization_defaults_required=True)

    slot_id: int
    enabled: bool = Field(description="It takes new trials (neither it nor its agent disabled).")
    draining: bool = Field(
        description="Disabled with drain (it or its agent): a trial running there may finish."
    )
    trial_id: int | None = Field(description="The trial that holds it now, if any.")
    experiment_id: int | None = Field(description="That trial's experiment.")
    device_type: Literal["cpu", "cuda"]
    device: str = Field(description="The device's name, where the master knows it.")


class AgentPublic(BaseModel):
    """The agent: the master itself, with its slots."""

    model_config = ConfigDict(json_schema_serialization_defaults_required=True)

    id: str
    version: str = Field(description="The master's version.")
    registered_time: datetime | None = Field(description="When the master started.")
    enabled: bool = Field(description="It takes new trials.")
    draining: bool = Field(description="Disabled with drain: its running trials may finish.")
    slots: list[SlotPublic]
    slots_used: int = Field(description="The slots that trials hold now.")


class DisableBody(BaseModel):
    """Body of the ``disable`` requests (optional: no body, no drain)."""

    model_config = ConfigDict(extra="forbid")

    drain: bool = Field(
        default=False,
        description="Let the trials running there finish (else they checkpoint and stop, "
        "and run again from that checkpoint later).",
    )


def _orchestrator(request: Request) -> Orchestrator | None:
    orchestrator = getattr(request.app.state, "orchestrator", None)
    return orchestrator if isinstance(orchestrator, Orchestrator) else None


def _cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _agent(request: Request, database: Database) -> AgentPublic:
    orchestrator = _orchestrator(request)
    if orchestrator is None:  # an API-only app: no slots; the settings as stored
        with database.session() as session:
            disabled = agents_repo.disabled(session, AGENT_ID)
        return AgentPublic(
            id=AGENT_ID,
            version=__version__,
            registered_time=None,
            enabled=agents_repo.WHOLE_AGENT not in disabled,
            draining=disabled.get(agents_repo.WHOLE_AGENT, False),
            slots=[],
            slots_used=0,
        )
    enabled, draining = orchestrator.agent_enabled()
    gpus = orchestrator.uses_gpus
    device = "" if gpus else _cpu_name()
    slots = [
        SlotPublic(
            slot_id=state.slot_id,
            enabled=state.enabled,
            draining=state.draining,
            trial_id=state.trial_id,
            experiment_id=(
                None if state.trial_id is None else orchestrator.experiment_of(state.trial_id)
            ),
            device_type="cuda" if gpus else "cpu",
            device=device,
        )
        for state in orchestrator.slot_states()
    ]
    return AgentPublic(
        id=AGENT_ID,
        version=__version__,
        registered_time=orchestrator.started_at,
        enabled=enabled,
        draining=not enabled and draining,
        slots=slots,
        slots_used=sum(1 for s in slots if s.trial_id is not None),
    )


def _check_agent(agent_id: str) -> None:
    if agent_id != AGENT_ID:
        raise ApiError(
            404, f"agent {agent_id!r} not found: a PEDL master is its own one agent, {AGENT_ID!r}"
        )


def _check_slot(request: Request, agent_id: str, slot_id: int) -> None:
    _check_agent(agent_id)
    orchestrator = _orchestrator(request)
    total = orchestrator.total_slots if orchestrator is not None else 0
    if slot_id >= total:
        has = f"slots 0 to {total - 1}" if total else "no slots (it runs no experiments)"
        raise ApiError(404, f"slot {slot_id} not found: agent {AGENT_ID!r} has {has}")


def _changed(request: Request) -> None:
    orchestrator = _orchestrator(request)
    if orchestrator is not None:
        orchestrator.reload_disabled_slots()


@router.get("", dependencies=[require_user])
def list_agents(request: Request, database: DatabaseDep) -> list[AgentPublic]:
    """The agents: the master itself, with its slots, each enabled or not and the trial it
    holds."""
    return [_agent(request, database)]


@router.get("/{agent_id}", dependencies=[require_user])
def get_agent(agent_id: AgentId, request: Request, database: DatabaseDep) -> AgentPublic:
    """The agent (``master``; 404 for another)."""
    _check_agent(agent_id)
    return _agent(request, database)


@router.get("/{agent_id}/slots", dependencies=[require_user])
def list_slots(agent_id: AgentId, request: Request, database: DatabaseDep) -> list[SlotPublic]:
    """The agent's slots."""
    _check_agent(agent_id)
    return _agent(request, database).slots


@router.post("/{agent_id}/enable", dependencies=[Depends(require_admin)])
def enable_agent(agent_id: AgentId, request: Request, database: DatabaseDep) -> AgentPublic:
    """Enable the agent: trials start on its enabled slots again (already enabled: no-op).
    Administrators only (403)."""
    _check_agent(agent_id)
    with database.session(write=True) as session:
        agents_repo.enable(session, AGENT_ID, agents_repo.WHOLE_AGENT)
    _changed(request)
    return _agent(request, database)


@router.post("/{agent_id}/disable")
def disable_agent(
    agent_id: AgentId,
    request: Request,
    database: DatabaseDep,
    user: AdminUser,
    body: Annotated[DisableBody | None, Body()] = None,
) -> AgentPublic:
    """Disable the agent: no new trial starts on it; with ``drain`` its running trials
    finish, without it they checkpoint and stop, and run again from that checkpoint once
    it is enabled. Administrators only (403)."""
    _check_agent(agent_id)
    drain = body.drain if body is not None else False
    with database.session(write=True) as session:
        agents_repo.disable(
            session, AGENT_ID, agents_repo.WHOLE_AGENT, drain=drain, by=user.username
        )
    _changed(request)
    return _agent(request, database)


@router.post("/{agent_id}/slots/{slot_id}/enable", dependencies=[Depends(require_admin)])
def enable_slot(
    agent_id: AgentId, slot_id: SlotId, request: Request, database: DatabaseDep
) -> SlotPublic:
    """Enable a slot (already enabled: no-op). Administrators only (403)."""
    _check_slot(request, agent_id, slot_id)
    with database.session(write=True) as session:
        agents_repo.enable(session, AGENT_ID, slot_id)
    _changed(request)
    return _agent(request, database).slots[slot_id]


@router.post("/{agent_id}/slots/{slot_id}/disable")
def disable_slot(
    agent_id: AgentId,
    slot_id: SlotId,
    request: Request,
    database: DatabaseDep,
    user: AdminUser,
    body: Annotated[DisableBody | None, Body()] = None,
) -> SlotPublic:
    """Disable a slot: no new trial is given it; the trial holding it, if any, checkpoints
    and stops (runs again later from that checkpoint), or finishes with ``drain``.
    Administrators only (403)."""
    _check_slot(request, agent_id, slot_id)
    drain = body.drain if body is not None else False
    with database.session(write=True) as session:
        agents_repo.disable(session, AGENT_ID, slot_id, drain=drain, by=user.username)
    _changed(request)
    return _agent(request, database).slots[slot_id]
