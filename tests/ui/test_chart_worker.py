"""The visualization tab's canvases drawn off the page's main thread (issue 38, item 4): the
parallel coordinates' lines, the scatter plots' dots, the optimization history, the timeline
and the learning curves are handed to a worker (``transferControlToOffscreen``) that draws
them; the page draws the same pixels itself where it is asked to (localStorage
``pedl:charts-on-main``) or where the worker cannot start; a change of the selection is drawn
again by the worker. In real Chromium, on the finished experiment of three trials."""

from __future__ import annotations

import base64

import numpy as np
import pytest
from playwright.sync_api import Locator, Page, expect

from tests.master.e2e import trials

from .conftest import Experiments
from .painted import BYTES_BASE64, CANVAS_PIXELS, painted_pixels, wait_for_charts

pytestmark = [pytest.mark.browser, pytest.mark.slow]

CANVASES = {
    "parallel coordinates": "[data-testid=parallel-coordinates] canvas.pc-base",
    "history": "[data-testid=history] canvas.history-plot",
    "timeline": "[data-testid=timeline] canvas.timeline-plot",
    "first scatter plot": "[data-testid=hp-scatter] .scatter >> nth=0 >> canvas.scatter-plot",
    "learning curves": "[data-testid=learning-curves] canvas.chart-canvas",
}
"""What is compared between the worker's drawing and the page's (a scatter plot's axes and
dots are one canvas)."""

COMPOSITE = f"""(canvases) => {{
    // The canvases drawn one over the other in page order (as the page shows them), as base64
    // of their RGBA bytes.
    const copy = document.createElement('canvas');
    copy.width = canvases[0].width;
    copy.height = canvases[0].height;
    const ctx = copy.getContext('2d');
    for (const canvas of canvases) ctx.drawImage(canvas, 0, 0);
    return ({BYTES_BASE64})(ctx.getImageData(0, 0, copy.width, copy.height).data);
}}"""

CHECKSUM = f"""(canvas) => ({CANVAS_PIXELS})(canvas)
    .reduce((sum, v, i) => (sum + v * (i % 7 + 1)) % 1000000007, 0)"""

CHANGED = f"""([canvas, before]) => ({CHECKSUM})(canvas) !== before"""


def _open(page: Page, experiments: Experiments, query: str = "") -> None:
    page.goto(f"{experiments.url}/#/experiments/{experiments.finished}/visualization{query}")
    expect(page.get_by_test_id("parallel-coordinates")).to_have_attribute("data-trial-count", "3")
    wait_for_charts(page)


def _canvases(page: Page) -> list[Locator]:
    return [page.locator(selector).first for selector in CANVASES.values()]


def _shows_something(canvas: Locator) -> None:
    pixels = painted_pixels(canvas)
    assert any(pixels[3::4]), "nothing drawn"


def _pixels(page: Page) -> dict[str, bytes]:
    return {
        name: base64.b64decode(page.locator(selector).evaluate_all(COMPOSITE))
        for name, selector in CANVASES.items()
    }


def test_the_charts_are_drawn_by_a_worker(page: Page, experiments: Experiments) -> None:
    _open(page, experiments)
    for canvas in _canvases(page):
        expect(canvas).to_have_attribute("data-offscreen", "true")
        _shows_something(canvas)
    # Every scatter plot's canvas drawn by the worker.
    scatters = page.locator("[data-testid=hp-scatter] .scatter")
    expect(scatters.first).to_be_visible()
    expect(
        page.locator("[data-testid=hp-scatter] canvas.scatter-plot[data-offscreen=true]")
    ).to_have_count(scatters.count())


def test_selecting_a_trial_is_drawn_again_by_the_worker(
    page: Page, experiments: Experiments
) -> None:
    _open(page, experiments)
    dots = page.locator("[data-testid=hp-scatter] canvas.scatter-plot").first
    _shows_something(dots)
    painted = int(dots.get_attribute("data-painted") or 0)
    before = dots.evaluate(CHECKSUM)
    trial_id = trials(experiments.master.http, experiments.finished)[0]["id"]
    page.evaluate(
        "(id) => { location.hash = location.hash.split('?')[0] + '?selected=' + id; }", trial_id
    )
    expect(page.get_by_test_id("vis-selection")).to_have_attribute("data-count", "1")
    page.wait_for_function(
        "([canvas, n]) => Number(canvas.dataset.painted) > n", arg=[dots.element_handle(), painted]
    )
    # the selected trial's dot is outlined: the canvas shows another frame
    page.wait_for_function(CHANGED, arg=[dots.element_handle(), before])


def test_the_page_draws_the_same_pixels_itself(page: Page, experiments: Experiments) -> None:
    _open(page, experiments)
    for canvas in _canvases(page):
        _shows_something(canvas)
    by_worker = _pixels(page)
    page.evaluate("() => localStorage.setItem('pedl:charts-on-main', '1')")
    try:
        page.reload()
        _open(page, experiments)
        for canvas in _canvases(page):
            expect(canvas).not_to_have_attribute("data-offscreen", "true")
            _shows_something(canvas)
        expect(page.locator("canvas[data-offscreen=true]")).to_have_count(0)
        by_page = _pixels(page)
    finally:
        page.evaluate("() => localStorage.removeItem('pedl:charts-on-main')")
    for name, pixels in by_worker.items():
        assert len(pixels) == len(by_page[name]), name
        # (a blend rounded apart in the worker and on the page: a shade at most)
        apart = np.abs(
            np.frombuffer(pixels, np.uint8).astype(np.int16)
            - np.frombuffer(by_page[name], np.uint8).astype(np.int16)
        )
        differing = int(np.count_nonzero(apart > 8))
        assert differing == 0, f"{name}: {differing} of {len(pixels)} bytes differ"


def test_the_page_draws_the_charts_where_the_worker_cannot_start(
    page: Page, experiments: Experiments
) -> None:
    page.route("**/chart.worker-*.js", lambda route: route.abort())
    _open(page, experiments)
    for canvas in _canvases(page):
        expect(canvas).not_to_have_attribute("data-offscreen", "true")
        _shows_something(canvas)
    expect(page.locator("canvas[data-offscreen=true]")).to_have_count(0)
