"""The visualization tab's charts follow the conventions docs/web-ui.md writes down (issue 35,
point 2), in Chromium against a real master: margins that clip no mark (the best dot whole
inside each scatter plot, the best value inside the history's range), legends made from the
marks drawn (their shapes and colours, and only those on the chart), time axes in one unit
from "0" (no "0ms"), a single-trial experiment without a one-axis parallel-coordinates plot,
the hyperparameters that do not vary listed, and the worst trials' lines visible on a dark
page. A trial's system metrics on an axis of its duration: tests/ui/test_newcomer.py."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Locator, Page, expect

from .conftest import Experiments, running_trial, screenshot
from .painted import wait_for_charts

pytestmark = [pytest.mark.browser, pytest.mark.slow]

BLUE = "rgb(78, 121, 167)"  # palette.ts seriesColor(0)
RED = "rgb(228, 87, 46)"  # palette.ts BEST_COLOR


def _swatch_colours(legend: Locator) -> list[tuple[str, str]]:
    """Each legend entry's mark and its swatch's drawn colour (a line's is its top border)."""
    pairs: list[list[str]] = legend.evaluate_all(
        """(items) => items.map((item) => {
            const swatch = getComputedStyle(item.querySelector('.swatch'));
            const mark = item.dataset.mark;
            return [mark, mark === 'line' ? swatch.borderTopColor : swatch.backgroundColor];
        })"""
    )
    return [(mark, colour) for mark, colour in pairs]


def _visualization(page: Page, experiments: Experiments, experiment_id: int) -> None:
    page.goto(f"{experiments.url}/#/experiments/{experiment_id}/visualization")
    wait_for_charts(page)


def test_legends_and_time_axes(page: Page, experiments: Experiments) -> None:
    _visualization(page, experiments, experiments.finished)
    history = page.get_by_test_id("history")
    expect(history).to_have_attribute("data-trial-count", "3")
    items = history.get_by_test_id("legend-item")
    expect(items).to_have_count(2)  # the dots and the step line; nothing brushed, none greyed
    assert _swatch_colours(items) == [("dot", BLUE), ("line", RED)]
    assert "brushed" not in history.locator(".chart-legend").inner_text()
    timeline = page.get_by_test_id("timeline")
    bars = timeline.get_by_test_id("legend-item")
    expect(bars).to_have_count(1)  # every trial COMPLETED: one colour of bar
    assert _swatch_colours(bars) == [("bar", BLUE)]
    for chart in (history, timeline):
        ticks = str(chart.get_attribute("data-x-ticks")).split("|")
        assert ticks[0] == "0" and len(ticks) >= 3, ticks
        units = {tick.split(" ")[1] for tick in ticks[1:]}
        assert len(units) == 1 and units <= {"s", "min", "h"}, ticks
    low, high = (float(v) for v in str(history.get_attribute("data-y-range")).split(","))
    best = float(str(history.get_attribute("data-best")))
    assert low < best < high, (low, best, high)
    scatters = page.locator(".chart.scatter")
    expect(scatters).not_to_have_count(0)
    for scatter in scatters.all():
        expect(scatter).to_have_attribute("data-inset", re.compile(r"^-?\d+$"))
        # The best dot (radius 5 px and its 0.75 px outline) wholly inside the plot.
        inset = int(str(scatter.get_attribute("data-inset")))
        assert inset >= 6, inset
    pc = page.get_by_test_id("parallel-coordinates")
    marks = pc.get_by_test_id("legend-item").evaluate_all("(all) => all.map((e) => e.dataset.mark)")
    assert marks == ["gradient", "best"], marks  # no grey or selected lines drawn
    constants = page.get_by_test_id("hp-constants")
    expect(constants).to_have_text(re.compile(r"global_batch_size=16"))
    screenshot(page, "visualization-conventions")


def test_a_single_trial_experiment(page: Page, experiments: Experiments) -> None:
    running_trial(experiments, experiments.live)
    _visualization(page, experiments, experiments.live)
    expect(page.get_by_test_id("pc-none")).to_contain_text("One trial")
    expect(page.get_by_test_id("parallel-coordinates")).to_have_count(0)
    constants = page.get_by_test_id("hp-constants")
    expect(constants).to_contain_text("Its values (no axis)")
    expect(constants).to_contain_text("lr=0.01")
    expect(constants).to_contain_text("dropout_seed=")
    screenshot(page, "visualization-single-trial")


def _luminance(rgb: str) -> float:
    channels = [int(c) / 255 for c in re.findall(r"\d+", rgb)[:3]]
    linear = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


def _contrast(a: str, b: str) -> float:
    high, low = sorted((_luminance(a), _luminance(b)), reverse=True)
    return (high + 0.05) / (low + 0.05)


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_the_worst_trials_are_visible(page: Page, experiments: Experiments, scheme: str) -> None:
    page.emulate_media(color_scheme="dark" if scheme == "dark" else "light")
    _visualization(page, experiments, experiments.finished)
    pc = page.get_by_test_id("parallel-coordinates")
    expect(pc).to_have_attribute("data-trial-count", "3")
    worst = str(pc.get_attribute("data-worst-color"))
    card = pc.evaluate("(e) => getComputedStyle(e.closest('.card')).backgroundColor")
    # WCAG's 3:1 for graphics against the card the lines are drawn on.
    assert _contrast(worst, card) >= 3, (scheme, worst, card)
    screenshot(page, f"visualization-worst-{scheme}")
