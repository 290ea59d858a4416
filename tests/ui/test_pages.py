"""The web UI in a real browser against a real master with real experiments: the list, the
experiment page's tabs and charts, pausing, a trial's live logs and its error, the cluster.
Each test saves screenshots of the pages it visits (tests/ui/screenshots/)."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from tests.master.e2e import experiment, trials, wait_for

from .conftest import Experiments, running_trial, screenshot

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
    page.wait_for_function("performance.getEntriesByName('pedl:charts-painted').length > 0")
    screenshot(page, "experiment-overview")
    for tab in ("trials", "checkpoints", "config"):
        page.get_by_test_id(f"tab-{tab}").click()
        if tab == "trials":
            expect(page.get_by_test_id("trial-row")).to_have_count(count)
        screenshot(page, f"experiment-{tab}")


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
    colours = canvas.evaluate(
        """(c) => {
            const data = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
            const seen = new Set();
            for (let i = 0; i < data.length; i += 97 * 4) seen.add(data.slice(i, i + 4).join());
            return seen.size;
        }"""
    )
    assert colours > 3
    expect(page.get_by_test_id("hp-scatter")).to_be_visible()
    screenshot(page, "experiment-visualization")


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
        timeout=60_000,
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
