"""Dark mode follows the browser (issue 24, item 6): with ``prefers-color-scheme: dark``
emulated, the page, its cards and the charts' axes are drawn dark-on-light reversed; with
``light``, as before. In real Chromium, on the finished experiment's learning curves."""

from __future__ import annotations

import re
from typing import Literal

import pytest
from playwright.sync_api import Page, expect

from .conftest import Experiments, screenshot

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def _lightness(css_colour: str) -> float:
    """0 (black) to 1 (white): the mean of an ``rgb(...)`` colour's channels."""
    channels = [int(c) for c in re.findall(r"\d+", css_colour)[:3]]
    assert len(channels) == 3, css_colour
    return sum(channels) / 765


AXIS_LIGHTNESS = """(chart) => {
    // The canvas left of uPlot's plot area holds only the y axis: its labels and ticks.
    const canvas = chart.querySelector('canvas');
    const plot = chart.querySelector('.u-over').getBoundingClientRect();
    const box = canvas.getBoundingClientRect();
    const ratio = canvas.width / box.width;
    const width = Math.floor((plot.left - box.left) * ratio);
    const data = canvas.getContext('2d').getImageData(0, 0, width, canvas.height).data;
    let sum = 0, count = 0;
    for (let i = 0; i < data.length; i += 4) {
        if (data[i + 3] > 200) { sum += (data[i] + data[i + 1] + data[i + 2]) / 765; count++; }
    }
    return count > 20 ? sum / count : -1;
}"""


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
    axis = curves.evaluate(AXIS_LIGHTNESS)
    assert axis >= 0, "no axis drawn left of the plot"
    assert (axis > 0.5) == dark, axis
    screenshot(page, f"experiment-overview-{scheme}")
