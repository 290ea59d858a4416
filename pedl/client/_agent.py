"""The master's one agent (itself, ``master``) and its slots: list them, disable or enable
them (``det agent disable|enable``, ``det slot disable|enable``; administrators)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict

from pedl.client._client import Client, default_client

AGENT_ID = "master"
"""The one agent of a PEDL master: itself."""


class Slot(BaseModel):
    """A slot of the agent: ``enabled`` (it takes new trials), ``draining`` (disabled with
    drain: a trial running there may finish), the trial holding it now, if any."""

    model_config = ConfigDict(extra="ignore")

    slot_id: int
    enabled: bool
    draining: bool
    trial_id: int | None = None
    experiment_id: int | None = None
    device_type: str = "cpu"
    device: str = ""


class Agent(BaseModel):
    """The agent: the master itself (``id`` ``master``), with its slots."""

    model_config = ConfigDict(extra="ignore")

    id: str
    version: str
    registered_time: datetime | None = None
    enabled: bool
    draining: bool
    slots: list[Slot]
    slots_used: int


def list_agents(*, client: Client | None = None) -> list[Agent]:
    """The agents: a PEDL master is its own one agent."""
    client = client or default_client()
    return [Agent.model_validate(a) for a in client.session.get("/agents")]


def get_agent(agent_id: str = AGENT_ID, *, client: Client | None = None) -> Agent:
    """The agent (``master``; :class:`~pedl.client.NotFoundError` for another)."""
    client = client or default_client()
    return Agent.model_validate(client.session.get(f"/agents/{agent_id}"))


def enable_agent(agent_id: str = AGENT_ID, *, client: Client | None = None) -> Agent:
    """Enable the agent: trials start on its enabled slots again."""
    client = client or default_client()
    return Agent.model_validate(client.session.post(f"/agents/{agent_id}/enable"))


def disable_agent(
    agent_id: str = AGENT_ID, drain: bool = False, *, client: Client | None = None
) -> Agent:
    """Disable the agent: no new trial starts; with ``drain`` the running trials finish,
    without it they checkpoint and stop, and run again from that checkpoint once the agent
    is enabled."""
    client = client or default_client()
    body: dict[str, Any] = {"drain": drain}
    return Agent.model_validate(client.session.post(f"/agents/{agent_id}/disable", json=body))


def enable_slot(agent_id: str, slot_id: int, *, client: Client | None = None) -> Slot:
    """Enable a slot of the agent."""
    client = client or default_client()
    return Slot.model_validate(client.session.post(f"/agents/{agent_id}/slots/{slot_id}/enable"))


def disable_slot(
    agent_id: str, slot_id: int, drain: bool = False, *, client: Client | None = None
) -> Slot:
    """Disable a slot of the agent: no new trial is given it; the trial holding it
    checkpoints and stops (it runs again later from that checkpoint), or with ``drain``
    finishes."""
    client = client or default_client()
    body: dict[str, Any] = {"drain": drain}
    return Slot.model_validate(
        client.session.post(f"/agents/{agent_id}/slots/{slot_id}/disable", json=body)
    )
