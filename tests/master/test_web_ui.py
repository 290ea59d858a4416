"""The master serves the built web UI at ``/`` (index.html for the app's own paths), and says
how to build it when it is not built; the API keeps its own 404s."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from pedl.master import MasterSettings, create_app
from tests.waits import scaled

from .helpers import LiveServer

INDEX = b"<!doctype html><title>PEDL</title><div id=app></div>"


def serve(tmp_path: Path, ui_dir: Path) -> LiveServer:
    settings = MasterSettings(home=tmp_path / "home", db_url=f"sqlite:///{tmp_path / 'ui.db'}")
    server = LiveServer(create_app(settings, ui_dir=ui_dir))
    server.start()
    return server


@pytest.fixture
def built(tmp_path: Path) -> Iterator[httpx.Client]:
    dist = tmp_path / "dist"
    (dist / "assets").mkdir(parents=True)
    (dist / "index.html").write_bytes(INDEX)
    (dist / "assets" / "index-3f2a1b.js").write_text("console.log('pedl')")
    (dist / "favicon.svg").write_text("<svg/>")
    (tmp_path / "secret.txt").write_text("outside")
    server = serve(tmp_path, dist)
    try:
        with httpx.Client(base_url=server.url, timeout=scaled(30)) as http:
            yield http
    finally:
        server.stop()


def test_index_assets_and_app_paths(built: httpx.Client) -> None:
    root = built.get("/")
    assert root.status_code == 200 and root.content == INDEX
    assert root.headers["content-type"].startswith("text/html")
    assert root.headers["cache-control"] == "no-cache"
    asset = built.get("/assets/index-3f2a1b.js")
    assert asset.status_code == 200 and asset.text == "console.log('pedl')"
    assert "immutable" in asset.headers["cache-control"]
    assert "javascript" in asset.headers["content-type"]
    assert built.get("/favicon.svg").text == "<svg/>"
    for app_path in ("/experiments", "/experiments/12/visualization", "/trials/40"):
        response = built.get(app_path)
        assert response.status_code == 200 and response.content == INDEX, app_path
    assert built.get("/assets/missing-123.js").status_code == 404
    nested = built.get("/experiments/assets/index-3f2a1b.js")  # a relative base, deep link
    assert nested.status_code == 200 and nested.text == "console.log('pedl')"
    assert built.head("/").status_code == 200


def test_api_and_docs_stay_the_apis(built: httpx.Client) -> None:
    assert built.get("/api/v1/health").json() == {"status": "ok"}
    for path in ("/api/v1/nope", "/api", "/api/v1/experiments/1/nope"):
        response = built.get(path)
        assert response.status_code == 404, path
        assert response.headers["content-type"] == "application/json", path
    assert built.post("/api/v1/health").status_code == 405
    assert built.get("/openapi.json").json()["info"]["title"] == "PEDL master"
    assert built.get("/docs").status_code == 200
    assert all(p.startswith("/api/v1/") for p in built.get("/openapi.json").json()["paths"])


def test_no_file_outside_the_build(built: httpx.Client) -> None:
    for path in ("/../secret.txt", "/%2e%2e/secret.txt", "/assets/..%2f..%2fsecret.txt"):
        response = built.get(path)
        assert b"outside" not in response.content, path


def test_not_built_says_how_to_build(tmp_path: Path) -> None:
    server = serve(tmp_path, tmp_path / "nothing-here")
    try:
        for path in ("/", "/experiments/3"):
            response = httpx.get(server.url + path)
            assert response.status_code == 200
            assert "make ui" in response.text and "not built" in response.text
        assert httpx.get(server.url + "/api/v1/health").status_code == 200
    finally:
        server.stop()


@pytest.mark.parametrize("auth", [True, False])
def test_the_page_says_whether_the_master_has_accounts(tmp_path: Path, auth: bool) -> None:
    """The page's pedl_accounts cookie: the app shows its sign-in form at once (no request
    answered 401 first) on a master with accounts, and asks nothing of a --no-auth one."""
    dist = tmp_path / "dist"
    (dist / "assets").mkdir(parents=True)
    (dist / "index.html").write_bytes(INDEX)
    (dist / "assets" / "index-1.js").write_text("1")
    settings = MasterSettings(
        home=tmp_path / "home", db_url=f"sqlite:///{tmp_path / 'ui.db'}", auth=auth
    )
    server = LiveServer(create_app(settings, ui_dir=dist))
    server.start()
    try:
        with httpx.Client(base_url=server.url, timeout=scaled(30)) as http:
            for path in ("/", "/index.html", "/experiments/3"):
                cookie = http.get(path).headers.get("set-cookie", "")
                value = "on" if auth else "off"
                assert cookie == f"pedl_accounts={value}; Path=/; SameSite=Strict", (path, cookie)
            assert "set-cookie" not in http.get("/assets/index-1.js").headers
    finally:
        server.stop()
