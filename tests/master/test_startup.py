"""What a master does before it opens its port: the first request after a (re)start is served
without FastAPI building its route table on the event loop."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pydantic
import pytest

from pedl.master import MasterSettings, create_app
from tests.waits import scaled

from .helpers import LiveServer


def test_the_first_request_builds_no_schema_on_the_event_loop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = MasterSettings(home=tmp_path, db_url=f"sqlite:///{tmp_path / 'pedl.db'}")
    built: list[Any] = []
    original = pydantic.TypeAdapter.__init__

    def counting_init(self: pydantic.TypeAdapter[Any], *args: Any, **kwargs: Any) -> None:
        built.append(args[0] if args else kwargs.get("type"))
        original(self, *args, **kwargs)

    with LiveServer(create_app(settings)) as server:
        monkeypatch.setattr(pydantic.TypeAdapter, "__init__", counting_init)
        with httpx.Client(base_url=server.url, timeout=scaled(30)) as http:
            assert http.get("/api/v1/health").status_code == 200
            assert http.get("/api/v1/experiments").status_code == 401  # routed, not signed in
            assert http.get("/openapi.json").status_code == 200
    # FastAPI would build a pydantic model field (a TypeAdapter) for each route's parameters
    # and responses here, on the first request, had startup not done it.
    assert built == []
