"""The UI's screenshot set (issue 35), light and dark, as build artefacts under
``build/screenshots/<scheme>/`` (git ignores ``build/``): the experiment list, an experiment's
overview and visualization tab, a trial's page while it runs and after it ended, the
comparison, the models, a trial's logs and the cluster, each taken once the page has drawn
what it shows. The documentation site built after them shows the light ones
(docs/hooks/screenshots.py; docs/web-ui.md)."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from playwright.sync_api import Page, expect

from tests.master.e2e import trials

from .conftest import SCREENSHOTS, Experiments, running_trial, screenshot
from .painted import wait_for_charts

pytestmark = [pytest.mark.browser, pytest.mark.slow]

SHOWN_MODEL = "ui-screenshots"
"""A model on the models page (without versions: other tests register the checkpoints)."""

NAMES = [
    "experiment-list",
    "experiment-overview",
    "experiment-visualization",
    "trial-running",
    "trial-completed",
    "compare",
    "models",
    "logs",
    "cluster",
]


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_the_screenshot_set(page: Page, experiments: Experiments, scheme: str) -> None:
    http = experiments.master.http
    if http.get(f"/models/{SHOWN_MODEL}").status_code == 404:
        description = "The digits classifier the demo trains"
        made = http.post("/models", json={"name": SHOWN_MODEL, "description": description})
        assert made.status_code == 201, made.text
    page.emulate_media(color_scheme="dark" if scheme == "dark" else "light")
    finished = sorted(t["id"] for t in trials(http, experiments.finished))
    live = running_trial(experiments, experiments.live)

    def drawn(test_id: str) -> Callable[[], None]:
        return lambda: expect(page.get_by_test_id(test_id).first).to_be_visible()

    def painted() -> None:
        wait_for_charts(page)

    def metric_charts() -> None:
        charts = page.get_by_test_id("trial-metrics").locator(".chart")
        expect(charts.first).to_be_visible()
        expect(charts.first).not_to_have_attribute("data-series-count", "0")

    def running() -> None:
        metric_charts()  # and its system metrics (sampled every second)
        system = page.get_by_test_id("system-chart-cpu")
        expect(system).not_to_have_attribute("data-series-count", "0")

    def series(test_id: str) -> Callable[[], None]:
        return lambda: expect(page.get_by_test_id(test_id).first).not_to_have_attribute(
            "data-series-count", "0"
        )

    def cluster() -> None:
        expect(page.get_by_test_id("cluster-slots")).to_have_attribute("data-slots-total", "2")
        expect(page.get_by_test_id("running-trial").first).to_be_visible()

    shots: list[tuple[str, str, Callable[[], None]]] = [
        ("experiment-list", "/experiments", drawn("experiment-row")),
        ("experiment-overview", f"/experiments/{experiments.finished}", painted),
        ("experiment-visualization", f"/experiments/{experiments.finished}/visualization", painted),
        ("trial-running", f"/trials/{live}", running),
        ("trial-completed", f"/trials/{finished[0]}", metric_charts),
        ("compare", f"/compare?trials={','.join(map(str, finished))}", series("compare-curves")),
        ("models", "/models", drawn("model-row")),
        ("logs", f"/trials/{finished[0]}?tab=logs", drawn("log-line")),
        ("cluster", "/cluster", cluster),
    ]
    assert [name for name, _, _ in shots] == NAMES
    for name, route, ready in shots:
        page.goto(f"{experiments.url}/#{route}")
        ready()
        expect(page.locator("html")).to_have_attribute("data-theme", scheme)
        screenshot(page, f"{scheme}/{name}")
    for name in NAMES:
        assert (SCREENSHOTS / scheme / f"{name}.png").stat().st_size > 10_000, name
