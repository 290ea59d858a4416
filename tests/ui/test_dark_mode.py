"""Dark mode follows the browser (issue 24, item 6): with ``prefers-color-scheme: dark``
emulated, the page, its cards and the charts' axes are drawn dark-on-light reversed; with
``light``, as before. In real Chromium, on the finished experiment's learning curves."""

from __future__ import annotations

import re
from typing import Literal

import numpy as np
import pytest
from playwright.sync_api import Locator, Page, expect

from .conftest import Experiments, screenshot
from .painted import painted_pixels

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def _lightness(css_colour: str) -> float:
    """0 (black) to 1 (white): the mean of an ``rgb(...)`` colour's channels."""
    channels = [int(c) for c in re.findall(r"\d+", css_colour)[:3]]
    assert len(channels) == 3, css_colour
    return sum(channels) / 765


PLOT_LEFT = """(chart) => {
    // Device pixels from the canvas' left edge to the plot area's (the element over it).
    const canvas = chart.querySelector('canvas');
    const box = canvas.getBoundingClientRect();
    const plot = chart.querySelector('.chart-over').getBoundingClientRect();
    return [Math.floor((plot.left - box.left) * canvas.width / box.width), canvas.width];
}"""


def _axis_lightness(chart: Locator) -> float:
    """The mean lightness of what is drawn (opaque enough) left of the plot area, where the
    canvas holds only the y axis' labels and ticks; -1 where too little is drawn there."""
    left, width = chart.evaluate(PLOT_LEFT)
    pixels = np.frombuffer(painted_pixels(chart.locator("canvas").first), np.uint8)
    rgba = pixels.reshape(-1, width, 4)[:, :left]
    drawn = rgba[rgba[..., 3] > 200]
    return float(drawn[:, :3].mean() / 255) if len(drawn) > 20 else -1.0


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_the_ui_follows_the_browsers_colour_scheme(
    page: Page, experiments: Experiments, scheme: Literal["light", "dark"]
) -> None:
    page.emulate_media(color_scheme=scheme)
    page.goto(f"{experiments.url}/#/experiments/{experiments.finished}")
    curves = page.get_by_test_id("learning-curves").first
    expect(curves).to_have_attribute("data-series-count", "3")
    page.wait_for_function("() => performance.getEntriesByName('pedl:charts-painted').length > 0")
    dark = scheme == "dark"
    page_colour = page.evaluate("getComputedStyle(document.documentElement).backgroundColor")
    text_colour = page.evaluate("getComputedStyle(document.body).color")
    card_colour = page.locator(".card").first.evaluate("(e) => getComputedStyle(e).backgroundColor")
    assert (_lightness(page_colour) < 0.3) == dark, page_colour
    assert (_lightness(card_colour) < 0.3) == dark, card_colour
    assert (_lightness(text_colour) > 0.7) == dark, text_colour
    axis = _axis_lightness(curves)
    assert axis >= 0, "no axis drawn left of the plot"
    assert (axis > 0.5) == dark, axis
    screenshot(page, f"experiment-overview-{scheme}")
