"""The agent and slot calls of the SDK and REST API (``/api/v1/agents``) on a real master
(API-only: no slots, the settings as stored): administrators disable and enable, everyone
reads; det's own request shapes (``POST .../disable`` with or without a body) work. What the
scheduler does with them: ``tests/master/test_agent_disable_e2e.py``."""

from __future__ import annotations

import httpx

from pedl import client as sdk
from pedl.client import Client, NotFoundError
from tests.accounts import auth_headers
from tests.client.helpers import LiveMaster
from tests.waits import scaled


def test_agent_calls(master: LiveMaster, client: Client) -> None:
    (agent,) = sdk.list_agents(client=client)
    assert agent.id == "master" and agent.enabled and not agent.draining
    assert sdk.disable_agent(drain=True, client=client).draining
    got = sdk.get_agent("master", client=client)
    assert not got.enabled and got.draining
    assert sdk.disable_agent(client=client).draining is False  # again: the new drain
    assert sdk.enable_agent(client=client).enabled
    try:
        sdk.get_agent("node-2", client=client)
        raise AssertionError("node-2 found")
    except NotFoundError as err:
        assert "its own one agent" in str(err)


def test_rest_shapes_and_permissions(master: LiveMaster, client: Client) -> None:
    api = master.url + "/api/v1"
    admin = auth_headers(master.url)
    bare = httpx.post(f"{api}/agents/master/disable", headers=admin, timeout=scaled(30))
    assert bare.status_code == 200 and bare.json()["enabled"] is False, bare.text
    drained = httpx.post(
        f"{api}/agents/master/disable", json={"drain": True}, headers=admin, timeout=scaled(30)
    )
    assert drained.json()["draining"] is True
    unknown = httpx.post(
        f"{api}/agents/master/disable", json={"drian": True}, headers=admin, timeout=scaled(30)
    )
    assert unknown.status_code == 422
    assert httpx.post(f"{api}/agents/master/enable", headers=admin).json()["enabled"] is True
    no_slot = httpx.post(f"{api}/agents/master/slots/0/disable", headers=admin)
    assert no_slot.status_code == 404 and "no slots" in no_slot.text
    assert httpx.get(f"{api}/agents/master/slots", headers=admin).json() == []

    client.create_user("agents-reader", password="agents-reader-password-1")
    reader = auth_headers(master.url, "agents-reader", "agents-reader-password-1")
    assert httpx.get(f"{api}/agents", headers=reader).status_code == 200
    for path in ("disable", "enable", "slots/0/disable", "slots/0/enable"):
        refused = httpx.post(f"{api}/agents/master/{path}", headers=reader)
        assert refused.status_code == 403, (path, refused.text)
    assert httpx.get(f"{api}/agents").status_code == 401
