"""What a newcomer sees on the trial page and in the tables (issue 35, point 5), in Chromium
against a real master: a short trial's system metrics on an axis of its own length with room for
its numbers, a trials table that fits 1400 px with one state column and metric headers that say
which value they show, the comparison's swatches in its curves' colours and deleted checkpoints
marked, logs with one timestamp a line, coloured levels, Follow off once the trial ended and a
word when no line matches, the config without its unset fields, sizes in the CLI's units, a
sign-in page that logs nothing, and a dark-mode switch."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

import pytest
from playwright.sync_api import Browser, ConsoleMessage, Page, Response, expect

from tests.master.e2e import trials

from .conftest import PAGE_TIMEOUT_MS, Experiments, running_trial, screenshot

pytestmark = [pytest.mark.browser, pytest.mark.slow]

DATE_PREFIX = re.compile(r"^\d{4}-\d\d-\d\d[ T]\d\d:\d\d")


def _finished_trials(experiments: Experiments) -> list[dict[str, Any]]:
    return sorted(trials(experiments.master.http, experiments.finished), key=lambda t: t["id"])


def test_a_short_trials_system_metrics_fit_its_duration(
    page: Page, experiments: Experiments
) -> None:
    http = experiments.master.http
    sampled = [
        (t, body)
        for t in _finished_trials(experiments)
        if (body := http.get(f"/trials/{t['id']}/system-metrics").json())["total"] > 0
    ]
    assert sampled, "no finished trial recorded a system metrics sample"
    trial, body = sampled[0]
    times = [s["time"] for s in body["samples"]]
    page.goto(f"{experiments.url}/#/trials/{trial['id']}")
    chart = page.get_by_test_id("system-chart-cpu")
    expect(chart).not_to_have_attribute("data-series-count", "0")
    expect(chart).to_have_attribute("data-x-range", re.compile(r"^0,"))
    high = float(str(chart.get_attribute("data-x-range")).split(",")[1])
    first = min(datetime.fromisoformat(t) for t in times)
    span = max(1.0, (datetime.fromisoformat(trial["ended_at"]) - first).total_seconds())
    # The axis runs from the first sample to the trial's end: not 0-100 around one dot.
    assert span <= high <= span + 0.5, (high, span, len(times))
    # The y axis is as wide as its widest number: no tick label clipped.
    for test_id in ("system-chart-cpu", "system-chart-rss"):
        one = page.get_by_test_id(test_id)
        ticks = int(str(one.get_attribute("data-y-ticks-px")))
        axis = int(str(one.get_attribute("data-y-axis-px")))
        assert ticks > 0 and axis >= ticks + 10, (test_id, ticks, axis)
        # Its label, turned along it, fits the plot's height.
        label = int(str(one.get_attribute("data-y-label-px")))
        height = int(str(one.get_attribute("data-plot-height-px")))
        assert 0 < label <= height, (test_id, label, height)
    screenshot(page, "trial-system-metrics-short")


def test_the_trials_tab_fits_1400_px_with_one_state_column(
    page: Page, experiments: Experiments
) -> None:
    assert page.viewport_size == {"width": 1400, "height": 900}
    page.goto(f"{experiments.url}/#/experiments/{experiments.finished}/trials")
    table = page.get_by_test_id("trials-table")
    expect(page.get_by_test_id("trial-row")).to_have_count(3)
    headers = [  # each header's label, without its sort arrow
        h.strip().splitlines()[0] if h.strip() else ""
        for h in table.locator("thead tr").first.locator("th").all_inner_texts()
    ]
    assert "Outcome" not in headers, headers
    assert "val_loss (best)" in headers and "val_loss (latest)" in headers, headers
    overflow = page.evaluate(
        """() => {
            const table = document.querySelector('[data-testid=trials-table]');
            const wrap = table.closest('.table-wrap');
            return {
                page: document.documentElement.scrollWidth - document.documentElement.clientWidth,
                table: wrap.scrollWidth - wrap.clientWidth,
            };
        }"""
    )
    # Nothing wider than its box (the page's is negative: its scrollbar's room is kept).
    assert overflow["page"] <= 0 and overflow["table"] <= 0, overflow
    for label in ("Started", "Duration"):
        cell = table.locator("thead th", has_text=label).first
        expect(cell).to_be_in_viewport()
    screenshot(page, "experiment-trials-1400")


def test_compare_swatches_take_the_curves_colours_and_deleted_checkpoints_are_marked(
    page: Page, experiments: Experiments
) -> None:
    live = running_trial(experiments, experiments.live)
    http = experiments.master.http
    rows: list[dict[str, Any]] = []
    while len(rows) < 2:  # the live trial checkpoints every 20 batches
        page.wait_for_timeout(1000)
        rows = http.get(f"/trials/{live}/checkpoints", params={"limit": 5}).json()["items"]
    oldest = min(rows, key=lambda c: c["total_batches"])  # not the latest: it may be deleted
    assert http.delete(f"/checkpoints/{oldest['uuid']}").status_code < 300
    finished = _finished_trials(experiments)[0]["id"]
    page.goto(f"{experiments.url}/#/compare?trials={finished},{live}")
    expect(page.get_by_test_id("compare-trial")).to_have_count(2)
    expect(page.get_by_test_id("compare-curves")).not_to_have_attribute("data-series-count", "0")
    swatches = page.get_by_test_id("compare-swatch").evaluate_all(
        "(all) => all.map((s) => getComputedStyle(s).borderTopColor)"
    )
    legend = page.get_by_test_id("compare-curves").locator(".chart-legend .swatch")
    expect(legend).to_have_count(2)
    drawn = legend.evaluate_all("(all) => all.map((s) => getComputedStyle(s).borderTopColor)")
    assert swatches == drawn, (swatches, drawn)
    assert len(set(swatches)) == 2, swatches
    grey = page.locator(".compare-table th").first.evaluate("(e) => getComputedStyle(e).color")
    assert grey not in swatches, (grey, swatches)
    marked = page.locator("[data-testid=compare-checkpoint][data-state=DELETED]")
    expect(marked.first).to_be_visible()
    expect(marked.first.locator(".badge")).to_have_text("deleted")
    decoration = marked.first.locator("code").evaluate(
        "(e) => getComputedStyle(e).textDecorationLine"
    )
    assert decoration == "line-through", decoration
    screenshot(page, "compare")


def test_a_finished_trials_logs(page: Page, experiments: Experiments) -> None:
    trial = _finished_trials(experiments)[0]["id"]
    page.goto(f"{experiments.url}/#/trials/{trial}?tab=logs")
    lines = page.get_by_test_id("log-line")
    expect(lines.first).to_be_visible()
    expect(page.locator("#log-follow")).not_to_be_checked()  # it ended: nothing to follow
    texts = page.locator("[data-testid=log-line] .log-text").all_inner_texts()
    assert texts and not any(DATE_PREFIX.match(t) for t in texts), texts[:5]
    assert page.get_by_test_id("log-time").count() == lines.count()
    info = page.locator(".log-level.level-info").first
    expect(info).to_have_text("INFO")
    colour = info.evaluate("(e) => getComputedStyle(e).color")
    text = page.locator(".log-text").first.evaluate("(e) => getComputedStyle(e).color")
    assert colour == "rgb(127, 178, 236)" and colour != text, (colour, text)
    screenshot(page, "trial-logs-finished")
    page.get_by_test_id("log-level").select_option(label="CRITICAL and above")
    no_match = page.get_by_test_id("log-no-match")
    expect(no_match).to_have_text(
        re.compile(r"^No lines match: none of the [\d,]+ lines is CRITICAL")
    )
    page.get_by_test_id("log-level").select_option(label="All levels")
    page.get_by_test_id("log-search").fill("no line says this")
    expect(no_match).to_contain_text("contains “no line says this”")
    screenshot(page, "trial-logs-no-match")


def test_the_config_tab_hides_unset_fields(page: Page, experiments: Experiments) -> None:
    page.goto(f"{experiments.url}/#/experiments/{experiments.finished}/config")
    yaml = page.get_by_test_id("config-yaml")
    expect(yaml).to_contain_text("searcher:")
    assert ": null" not in yaml.inner_text()
    toggle = page.get_by_test_id("config-show-nulls")
    toggle.check()
    expect(yaml).to_contain_text(": null")
    shown = yaml.inner_text().count(": null")
    label = page.locator("label[for=config-show-nulls]").inner_text()
    assert f"Show the {shown} unset fields" in label, (label, shown)
    toggle.uncheck()
    expect(yaml).not_to_contain_text(": null")
    screenshot(page, "experiment-config")


def test_sizes_in_the_clis_units(page: Page, experiments: Experiments) -> None:
    page.goto(f"{experiments.url}/#/experiments/{experiments.finished}/checkpoints")
    size = (
        page.locator("table.data tbody tr")
        .first.locator("td.num")
        .filter(has_text=re.compile(r"B$"))
    )
    expect(size.first).to_have_text(re.compile(r"^\d+(\.\d)? (B|KiB|MiB|GiB)$"))


def test_the_sign_in_page_logs_nothing(browser: Browser, experiments: Experiments) -> None:
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    context.set_default_timeout(PAGE_TIMEOUT_MS)
    tab = context.new_page()
    messages: list[str] = []
    refused: list[str] = []

    def console(message: ConsoleMessage) -> None:
        if message.type in ("error", "warning"):
            messages.append(message.text)

    def response(answer: Response) -> None:
        if answer.status >= 400:
            refused.append(f"{answer.status} {answer.url}")

    tab.on("console", console)
    tab.on("response", response)
    try:
        tab.goto(f"{experiments.url}/#/experiments")
        expect(tab.get_by_test_id("sign-in-form")).to_be_visible()
        tab.wait_for_load_state("networkidle")
        assert refused == [] and messages == [], (refused, messages)
        screenshot(tab, "sign-in")
    finally:
        context.close()


def test_the_dark_mode_switch(page: Page, experiments: Experiments) -> None:
    page.emulate_media(color_scheme="light")
    page.goto(f"{experiments.url}/#/experiments/{experiments.finished}")
    expect(page.locator("html")).to_have_attribute("data-theme", "light")
    switch = page.get_by_test_id("color-scheme")
    expect(switch).to_have_value("auto")
    switch.select_option("dark")
    expect(page.locator("html")).to_have_attribute("data-theme", "dark")
    background = page.evaluate("getComputedStyle(document.documentElement).backgroundColor")
    assert background == "rgb(18, 22, 29)", background
    expect(page.get_by_test_id("learning-curves").first).to_have_attribute("data-series-count", "3")
    page.reload()  # the choice stays in this browser
    expect(page.locator("html")).to_have_attribute("data-theme", "dark")
    expect(page.get_by_test_id("color-scheme")).to_have_value("dark")
    screenshot(page, "dark-mode-switch")
    page.get_by_test_id("color-scheme").select_option("auto")
    expect(page.locator("html")).to_have_attribute("data-theme", "light")
    page.emulate_media(color_scheme="dark")  # auto follows the browser
    expect(page.locator("html")).to_have_attribute("data-theme", "dark")
