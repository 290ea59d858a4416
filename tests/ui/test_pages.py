"""The web UI in a real browser against a real master with real experiments: the list, the
experiment page's tabs and charts, pausing, a trial's live logs and its error, the cluster.
Each test saves screenshots of the pages it visits (build/screenshots/)."""

from __future__ import annotations

import re
import time
from datetime import UTC, datetime

import pytest
from playwright.sync_api import Locator, Page, Route, expect

from tests.master.e2e import experiment, trials, wait_for
from tests.waits import scaled_ms

from .conftest import Experiments, running_trial, screenshot
from .painted import painted_pixels, wait_for_charts

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def open_page(page: Page, experiments: Experiments, route: str) -> None:
    page.goto(f"{experiments.url}/#{route}")


def test_list_shows_the_finished_experiment(page: Page, experiments: Experiments) -> None:
    open_page(page, experiments, "/experiments")
    row = page.locator(f"[data-testid=experiment-row][data-experiment-id='{experiments.finished}']")
    expect(row).to_be_visible()
    expect(row).to_contain_text("ui-finished")
    expect(row.get_by_test_id("experiment-state")).to_contain_text("COMPLETED", ignore_case=True)
    expect(row.get_by_test_id("progress-bar")).to_be_visible()
    errored = page.locator(
        f"[data-testid=experiment-row][data-experiment-id='{experiments.errored}']"
    )
    expect(errored.get_by_test_id("experiment-state")).to_contain_text("ERROR", ignore_case=True)
    screenshot(page, "experiment-list")
    # Filtered by state through the URL: only the finished one of these.
    open_page(page, experiments, "/experiments?state=COMPLETED")
    expect(row).to_be_visible()
    expect(errored).to_have_count(0)


def test_learning_curves_have_one_line_per_trial(page: Page, experiments: Experiments) -> None:
    count = len(trials(experiments.master.http, experiments.finished))
    assert count == 3
    open_page(page, experiments, f"/experiments/{experiments.finished}")
    expect(page.get_by_test_id("tab-overview")).to_be_visible()
    curves = page.get_by_test_id("learning-curves").first
    expect(curves).to_have_attribute("data-series-count", str(count))
    assert curves.locator("canvas").count() >= 1
    page.wait_for_function("() => performance.getEntriesByName('pedl:charts-painted').length > 0")
    screenshot(page, "experiment-overview")
    for tab in ("trials", "checkpoints", "config"):
        page.get_by_test_id(f"tab-{tab}").click()
        if tab == "trials":
            expect(page.get_by_test_id("trial-row")).to_have_count(count)
        screenshot(page, f"experiment-{tab}")


def _x_range(curves: Locator) -> tuple[float, float]:
    low, high = (float(v) for v in str(curves.get_attribute("data-x-range")).split(","))
    return low, high


def test_learning_curves_zoom_hover_and_pick(page: Page, experiments: Experiments) -> None:
    """A drag along the curves zooms into the x range it spans and a double click zooms back
    out; the pointer near a point shows its trial, and a click there selects that trial."""
    open_page(page, experiments, f"/experiments/{experiments.finished}/visualization")
    curves = page.get_by_test_id("learning-curves").first
    expect(curves).to_have_attribute("data-series-count", "3")
    wait_for_charts(page)
    low, high = _x_range(curves)
    unzoomed = str(curves.get_attribute("data-x-range"))
    over = curves.locator(".chart-over")
    over.scroll_into_view_if_needed()
    box = over.bounding_box()
    assert box is not None and box["width"] > 100
    y = box["y"] + box["height"] / 2
    page.mouse.move(box["x"] + box["width"] * 0.25, y)
    page.mouse.down()
    page.mouse.move(box["x"] + box["width"] * 0.5, y)
    page.mouse.move(box["x"] + box["width"] * 0.75, y)
    page.mouse.up()
    expect(curves).not_to_have_attribute("data-x-range", unzoomed)
    zoomed = _x_range(curves)
    span = high - low
    assert zoomed[0] == pytest.approx(low + 0.25 * span, abs=0.02 * span), zoomed
    assert zoomed[1] == pytest.approx(low + 0.75 * span, abs=0.02 * span), zoomed
    over.dblclick(position={"x": box["width"] / 2, "y": box["height"] / 2})
    expect(curves).to_have_attribute("data-x-range", unzoomed)
    # Down the right edge, where every trial has its last point, until one is under the pointer.
    tooltip = over.locator(".chart-tooltip")
    for step in range(int(box["height"] // 6) + 1):
        page.mouse.move(box["x"] + box["width"] - 2, box["y"] + 6 * step)
        if tooltip.is_visible():
            break
    expect(tooltip).to_be_visible()
    shown = re.search(r"Trial (\d+)", tooltip.inner_text())
    assert shown is not None, tooltip.inner_text()
    page.mouse.down()
    page.mouse.up()
    selection = page.get_by_test_id("vis-selection")
    expect(selection).to_have_attribute("data-count", "1")
    expect(selection).to_contain_text(shown.group(1))


def test_visualization_parallel_coordinates_render(page: Page, experiments: Experiments) -> None:
    open_page(page, experiments, f"/experiments/{experiments.finished}/visualization")
    curves = page.get_by_test_id("learning-curves").first
    expect(curves).to_have_attribute("data-series-count", "3")
    parallel = page.get_by_test_id("parallel-coordinates")
    expect(parallel).to_have_attribute("data-trial-count", "3")
    canvas = parallel.locator("canvas").first
    expect(canvas).to_be_visible()
    box = canvas.bounding_box()
    assert box is not None and box["width"] > 100 and box["height"] > 100
    # Something was drawn: the canvas is not one flat colour.
    data = painted_pixels(canvas)
    colours = {tuple(data[i : i + 4]) for i in range(0, len(data), 97 * 4)}
    assert len(colours) > 3
    expect(page.get_by_test_id("hp-scatter")).to_be_visible()
    screenshot(page, "experiment-visualization")


def test_visualization_axes_fit_the_experiment_and_its_marks(
    page: Page, experiments: Experiments
) -> None:
    """The "Trials over slots" timeline of an ended experiment runs from its start to its
    end, not to now; the scatter plots leave a margin, so no dot (the best's: radius 5) is
    cut by the plot's edge."""
    ended = experiment(experiments.master.http, experiments.finished)
    lasted = (
        datetime.fromisoformat(ended["ended_at"]) - datetime.fromisoformat(ended["created_at"])
    ).total_seconds()
    since = datetime.now(UTC) - datetime.fromisoformat(ended["ended_at"])
    time.sleep(max(0.0, 5 - since.total_seconds()))  # now is well past the end
    open_page(page, experiments, f"/experiments/{experiments.finished}/visualization")
    timeline = page.get_by_test_id("timeline")
    expect(timeline).to_have_attribute("data-x-max", re.compile(r"\d"))
    x_max = float(timeline.get_attribute("data-x-max") or "nan")
    # (A trial's process may be seen to exit a moment after the experiment ended.)
    assert lasted - 0.5 <= x_max <= lasted + 2, (x_max, lasted)
    scatters = page.get_by_test_id("hp-scatter").locator(".scatter[data-inset]")
    expect(scatters.first).to_be_visible()
    insets = [int(s.get_attribute("data-inset") or -1) for s in scatters.all()]
    assert insets and min(insets) >= 6, insets
    screenshot(page, "experiment-visualization-margins")


def test_pausing_from_the_ui_pauses_the_experiment(page: Page, experiments: Experiments) -> None:
    running_trial(experiments, experiments.pausable)
    open_page(page, experiments, f"/experiments/{experiments.pausable}")
    expect(page.get_by_test_id("experiment-state")).to_contain_text("ACTIVE", ignore_case=True)
    page.get_by_test_id("action-pause").click()
    if page.get_by_test_id("confirm-dialog").is_visible():
        page.get_by_test_id("confirm-yes").click()
    wait_for(experiments.master.http, experiments.pausable, {"PAUSED"}, timeout=60)
    assert experiment(experiments.master.http, experiments.pausable)["state"] == "PAUSED"
    expect(page.get_by_test_id("experiment-state")).to_contain_text("PAUSED", ignore_case=True)
    expect(page.get_by_test_id("action-activate")).to_be_enabled()
    screenshot(page, "experiment-paused")


def test_trial_log_follows_the_running_trial(page: Page, experiments: Experiments) -> None:
    trial_id = running_trial(experiments, experiments.live)
    open_page(page, experiments, f"/trials/{trial_id}?tab=logs")
    lines = page.get_by_test_id("log-line")
    expect(lines.first).to_be_visible()
    before = lines.count()
    last_seq = int(lines.last.get_attribute("data-seq") or -1)
    # New lines appear without reloading the page.
    page.wait_for_function(
        "(n) => document.querySelectorAll('[data-testid=log-line]').length > n",
        arg=before,
        timeout=scaled_ms(60),
    )
    assert int(lines.last.get_attribute("data-seq") or -1) > last_seq
    seqs = [int(s) for s in lines.evaluate_all("(ls) => ls.map((l) => l.dataset.seq)")]
    assert seqs == sorted(set(seqs))  # no line twice
    screenshot(page, "trial-logs-live")
    # Search: only matching lines stay.
    page.get_by_test_id("log-search").fill("validation at batch")
    expect(lines.first).to_contain_text("validation at batch")
    texts = lines.all_inner_texts()
    assert texts and all("validation at batch" in text for text in texts)
    screenshot(page, "trial-logs-search")


def test_trial_page_opened_before_metrics_draws_them_when_they_come(
    page: Page, experiments: Experiments
) -> None:
    """The default metrics are picked when the first rows arrive, not once at opening: the
    running trial's metric rows are held back (answered empty) until the page has said it has
    none, then let through; the charts of the searcher's metric and ``loss`` appear without a
    reload."""
    trial_id = running_trial(experiments, experiments.live)
    held = [True]

    def metrics(route: Route) -> None:
        if held[0]:
            route.fulfill(status=200, content_type="application/json", body="[]")
        else:
            route.continue_()

    page.route(f"**/api/v1/trials/{trial_id}/metrics*", metrics)
    open_page(page, experiments, f"/trials/{trial_id}")
    card = page.get_by_test_id("trial-metrics")
    expect(card.get_by_text("No metrics reported yet.")).to_be_visible()
    held[0] = False
    cells = card.locator(".chart-cell figcaption")
    expect(cells).to_have_text(["loss", "val_loss"], timeout=scaled_ms(60))
    expect(page.locator("#metric-loss")).to_be_checked()
    expect(page.locator("#metric-val_loss")).to_be_checked()
    screenshot(page, "trial-metrics-late")


def test_errored_trial_shows_its_error(page: Page, experiments: Experiments) -> None:
    (trial,) = trials(experiments.master.http, experiments.errored)
    assert trial["error"]["type"] == "RuntimeError"
    open_page(page, experiments, f"/trials/{trial['id']}")
    error = page.get_by_test_id("trial-error")
    expect(error).to_contain_text("RuntimeError")
    expect(error).to_contain_text("build_model failed on purpose")
    if trial["error"]["location"]:
        expect(error).to_contain_text(trial["error"]["location"])
    screenshot(page, "trial-errored")


def test_finished_trial_page_and_cluster(page: Page, experiments: Experiments) -> None:
    trial = trials(experiments.master.http, experiments.finished)[0]
    open_page(page, experiments, f"/trials/{trial['id']}")
    expect(page.get_by_text("COMPLETED", exact=False).first).to_be_visible()
    page.wait_for_timeout(500)  # the metric charts draw
    screenshot(page, "trial-completed")
    running_trial(experiments, experiments.live)
    open_page(page, experiments, "/cluster")
    slots = page.get_by_test_id("cluster-slots")
    expect(slots).to_contain_text("2")
    screenshot(page, "cluster")
