"""A running trial's system metrics on its page in a real browser: the samples its process
recorded on this machine (every second here, PEDL_SYSTEM_METRICS_INTERVAL=1, six to a
batch) drawn as charts, the same count as the API holds."""

from __future__ import annotations

import time

import pytest
from playwright.sync_api import Page, expect

from tests.waits import scaled

from .conftest import Experiments, running_trial, screenshot

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def test_a_trial_page_draws_the_system_metrics_its_process_recorded(
    page: Page, experiments: Experiments
) -> None:
    http = experiments.master.http
    trial_id = running_trial(experiments, experiments.live)
    deadline = time.monotonic() + scaled(60)
    while True:
        body = http.get(f"/trials/{trial_id}/system-metrics").json()
        if body["total"] >= 6:
            break
        assert time.monotonic() < deadline, body
        time.sleep(0.5)
    sample = body["samples"][0]
    assert sample["rank"] == 0
    assert 0 <= sample["metrics"]["cpu_percent"] <= 100
    assert sample["metrics"]["process_rss_bytes"] > 10 * 1024 * 1024  # a Python with Keras

    page.goto(f"{experiments.url}/#/trials/{trial_id}")
    card = page.get_by_test_id("system-metrics")
    expect(card.get_by_role("heading", name="System metrics")).to_be_visible()
    for chart in ("cpu", "memory", "rss", "disk", "network"):
        expect(card.get_by_test_id(f"system-chart-{chart}")).not_to_have_attribute(
            "data-series-count", "0"
        )
    expect(card.get_by_test_id("system-chart-cpu")).to_have_attribute("data-series-count", "2")
    expect(card.get_by_test_id("system-chart-cpu").locator("canvas")).to_be_visible()
    summary = card.get_by_test_id("system-metrics-summary")
    expect(summary).to_contain_text("from 1 process")
    shown = int(summary.inner_text().split(" samples")[0].replace(",", ""))
    assert shown >= body["total"]
    # No GPU on this machine (or no NVIDIA library): no GPU charts, nothing broken.
    if not any(name.startswith("gpu") for name in sample["metrics"]):
        expect(card.get_by_test_id("system-chart-gpu")).to_have_count(0)
    screenshot(page, "trial-system-metrics")
