"""The cluster-wide message (``det master cluster-message set``) shows under the header of
every page while it is in its time window, and not once it is cleared or before it starts.
In real Chromium, on a master process of its own (no experiments)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.master.e2e import MasterProcess

from .conftest import screenshot, signed_in_tab

pytestmark = [pytest.mark.browser, pytest.mark.slow]


@pytest.fixture(scope="module")
def master(
    chromium_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[MasterProcess]:
    process = MasterProcess(tmp_path_factory.mktemp("ui-message-master")).start()
    try:
        yield process
    finally:
        process.stop()


@pytest.fixture
def tab(browser: Browser, master: MasterProcess) -> Iterator[Page]:
    with signed_in_tab(browser, master, width=1200, height=800) as tab:
        yield tab


def test_the_message_shows_while_it_is_current(tab: Page, master: MasterProcess) -> None:
    http = master.http
    banner = tab.get_by_test_id("cluster-message")

    assert http.put("/master/cluster_message", json={"message": "Down at 18:00"}).status_code == 200
    tab.goto(f"{master.url}/#/experiments")
    expect(banner).to_be_visible()
    expect(banner).to_have_text("Down at 18:00")
    expect(banner).to_have_attribute("role", "status")
    screenshot(tab, "cluster-message")
    tab.goto(f"{master.url}/#/models")
    tab.reload()
    expect(banner).to_have_text("Down at 18:00")

    later = (datetime.now(UTC) + timedelta(days=1)).isoformat()
    body = {"message": "Tomorrow", "start_time": later, "duration": "1h"}
    assert http.put("/master/cluster_message", json=body).status_code == 200
    with tab.expect_response(lambda response: "/master/cluster_message" in response.url):
        tab.reload()
    expect(banner).to_be_hidden()  # not started yet

    assert http.delete("/master/cluster_message").status_code == 204
    with tab.expect_response(lambda response: "/master/cluster_message" in response.url):
        tab.reload()
    expect(banner).to_be_hidden()
