"""The search at a glance, in the real Chromium, on an experiment seeded straight into the
master's database (no training): hyperparameter importance, the optimization history and
the timeline drawn with the values seeded; three trials compared from a URL; three trials
selected in a chart and compared; a box dragged on a scatter plot selects the trials inside;
brushing an axis of the parallel coordinates filters the trials table, greys the other trials
in the scatter plots, the history and the curves, and narrows the curves to the kept trials;
sorting and filtering the table by a hyperparameter; archiving experiments in bulk from the
list."""

from __future__ import annotations

import random
import secrets
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import pytest
from playwright.sync_api import Browser, FloatRect, Locator, Page, expect
from sqlalchemy import insert

from pedl.db import LogLine, Metric, Trial
from pedl.db import logs as logs_repo
from pedl.db.search_history import ATTEMPT_EXITED, ATTEMPT_STARTED, MASTER_STREAM
from pedl.vocabulary import MetricKind, TrialState
from tests.master.e2e import MasterProcess
from tests.waits import scaled, scaled_ms

from .conftest import ended_experiment, master_database, screenshot, seeded_master, signed_in_tab

pytestmark = [pytest.mark.browser, pytest.mark.slow]

SEARCH = """\
name: ui-search
entrypoint: model_def:MyTrial
hyperparameters:
  lr: {type: log, minval: -4, maxval: -1}
  units: {type: int, minval: 1, maxval: 100}
  opt: {type: categorical, vals: [adam, sgd, rmsprop]}
searcher: {name: random, metric: val_loss, smaller_is_better: true, max_trials: 30,
           max_length: {batches: 30}}
"""
TRIALS = 30
# units alone decides val_loss; none near the middle of 1..100, so a brush to the middle of
# its axis splits the trials without a pixel's doubt.
UNITS = [1, 100, *random.Random(5).sample([u for u in range(2, 100) if not 40 <= u <= 61], 28)]


@dataclass(frozen=True)
class Seeded:
    master: MasterProcess
    experiment_id: int
    trial_ids: list[int]
    units: dict[int, int]
    """Trial id: its units."""
    opts: dict[int, str]
    """Trial id: its opt."""


@pytest.fixture(scope="module")
def seeded(chromium_path: object, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Seeded]:
    """A master of its own (no trial runs on it) with the experiment written into its
    database."""
    rng = random.Random(11)
    with seeded_master(tmp_path_factory, "ui-search") as (master, database):
        experiment_id, start = ended_experiment(
            database,
            SEARCH,
            name="ui-search",
            description="seeded for the search charts",
            labels=("ui-search",),
            metric="val_loss",
            smaller_is_better=True,
        )
        trials, metrics, opts = [], [], []
        for index, units in enumerate(UNITS):
            loss = units / 100
            lr = 10 ** rng.uniform(-4, -1)
            opts.append(rng.choice(["adam", "sgd", "rmsprop"]))
            trials.append(
                {
                    "experiment_id": experiment_id,
                    "request_id": f"ui-search-{index}",
                    "hparams": {"lr": lr, "units": units, "opt": opts[-1]},
                    "seed": index,
                    "state": TrialState.COMPLETED,
                    "total_batches": 30,
                    "best_validation": loss,
                    "outcome": "COMPLETED",
                    "token_hash": secrets.token_hex(32),
                    "created_at": start,
                    "ended_at": start + timedelta(seconds=10 * index + 15),
                }
            )
        with database.session(write=True) as session:
            ids = list(session.scalars(insert(Trial).returning(Trial.id), trials))
            for index, trial_id in enumerate(ids):
                loss = UNITS[index] / 100
                for step in (1, 2, 3):
                    metrics.append(
                        {
                            "trial_id": trial_id,
                            "kind": MetricKind.VALIDATION,
                            "total_batches": 10 * step,
                            "metrics": {"val_loss": loss + (3 - step) * 0.1},
                            "reported_at": datetime.now(UTC),
                        }
                    )
                began = start + timedelta(seconds=10 * index)
                logs_repo.append_logs(
                    session,
                    trial_id,
                    [
                        LogLine(
                            0,
                            f"{ATTEMPT_STARTED} from scratch",
                            stream=MASTER_STREAM,
                            timestamp=began,
                        ),
                        LogLine(
                            1,
                            f"{ATTEMPT_EXITED} (exit code 0)",
                            stream=MASTER_STREAM,
                            timestamp=began + timedelta(seconds=15),
                        ),
                    ],
                )
            session.execute(insert(Metric.__table__), metrics)
        yield Seeded(
            master,
            experiment_id,
            ids,
            dict(zip(ids, UNITS, strict=True)),
            dict(zip(ids, opts, strict=True)),
        )


@pytest.fixture
def page(browser: Browser, seeded: Seeded) -> Iterator[Page]:
    """A tab signed in to the seeded master (conftest's ``page`` is of the trained
    experiments' master)."""
    with signed_in_tab(browser, seeded.master) as tab:
        yield tab


def test_importance_history_and_timeline(page: Page, seeded: Seeded) -> None:
    page.goto(f"{seeded.master.url}/#/experiments/{seeded.experiment_id}/visualization")
    importance = page.get_by_test_id("importance")
    expect(importance).to_have_attribute("data-ready", "true", timeout=scaled_ms(120))
    expect(importance).to_have_attribute("data-trials", str(TRIALS))
    bars = importance.get_by_test_id("importance-bar")
    expect(bars).to_have_count(3)
    assert bars.first.get_attribute("data-name") == "units"
    assert float(bars.first.get_attribute("data-importance") or 0) > 0.5
    history = page.get_by_test_id("history")
    # The master computes the importance, history and timeline of an ended experiment once:
    # on two busy cores that may take a while.
    expect(history).to_have_attribute("data-trial-count", str(TRIALS), timeout=scaled_ms(60))
    assert float(history.get_attribute("data-best") or "nan") == pytest.approx(0.01)
    # In the order they ended (trial i at 10 i + 15 s): the best so far falls as they come.
    # Its data as a table, in a disclosure under it: built only when opened.
    rows = history.locator("tbody tr")
    expect(rows).to_have_count(0)
    history.get_by_text("Data as a table").click()
    expect(rows).to_have_count(TRIALS)
    first = rows.first.locator("td").all_inner_texts()
    assert first[0] == str(seeded.trial_ids[0]) and first[2] == "0.01"
    timeline = page.get_by_test_id("timeline")
    expect(timeline).to_have_attribute("data-attempt-count", str(TRIALS), timeout=scaled_ms(60))
    expect(timeline).to_have_attribute("data-slots", "2")  # each ran 15 s, one started every 10 s
    expect(timeline.locator("tbody tr")).to_have_count(0)
    timeline.get_by_text("Data as a table").click()
    expect(timeline.locator("tbody tr")).to_have_count(TRIALS)
    slots = [r.locator("td").nth(1).inner_text() for r in timeline.locator("tbody tr").all()[:4]]
    assert slots == ["0", "1", "0", "1"]
    page.wait_for_function("() => performance.getEntriesByName('pedl:charts-painted').length > 0")
    screenshot(page, "search-charts")


@pytest.mark.parametrize("tab", ["", "/visualization"])
def test_a_page_asks_the_master_for_each_chart_once(page: Page, seeded: Seeded, tab: str) -> None:
    # index.html starts the experiment page's first requests while the app's code loads; the
    # app takes those answers instead of asking again, and the overview asks for no chart it
    # does not draw (the trials summary is the visualization tab's).
    urls: list[str] = []
    page.on("request", lambda request: urls.append(request.url))
    page.goto(f"{seeded.master.url}/#/experiments/{seeded.experiment_id}{tab}")
    # Polled from here: wait_for_function's in-page polling is an eval the page's CSP refuses.
    deadline = time.monotonic() + scaled(60)
    while not page.evaluate("performance.getEntriesByName('pedl:charts-painted').length"):
        assert time.monotonic() < deadline, "the page never marked its charts painted"
        page.wait_for_timeout(100)
    page.wait_for_load_state("networkidle")
    api = f"/api/v1/experiments/{seeded.experiment_id}"
    assert [u for u in urls if u.endswith(api)] != []
    assert len([u for u in urls if f"{api}/series?" in u]) == 1, urls
    assert len([u for u in urls if u.endswith(f"{api}/trials/summary")]) == (1 if tab else 0)


def test_compare_three_trials_from_a_url(page: Page, seeded: Seeded) -> None:
    picked = seeded.trial_ids[3:6]
    page.goto(f"{seeded.master.url}/#/compare?trials={','.join(map(str, picked))}")
    headers = page.get_by_test_id("compare-trial")
    expect(headers).to_have_count(3)
    assert [int(h.get_attribute("data-trial-id") or 0) for h in headers.all()] == picked
    units = page.locator("[data-testid=compare-hparam][data-name=units] td").all_inner_texts()
    assert units == [str(seeded.units[t]) for t in picked]
    final = page.locator("[data-testid=compare-final][data-name=val_loss] td").all_inner_texts()
    assert [float(v) for v in final] == pytest.approx([seeded.units[t] / 100 for t in picked])
    expect(page.get_by_test_id("compare-curves")).to_have_attribute("data-series-count", "3")
    screenshot(page, "compare")


def _trials_table_count(page: Page) -> Locator:
    """The trials table's count, once the table is scrolled into view: below the charts, it
    is built only near the viewport."""
    page.locator(".summary-table").scroll_into_view_if_needed()
    return page.get_by_test_id("summary-count")


def _summary_units(page: Page) -> list[int]:
    cells = page.locator("[data-testid=summary-row] td[data-column='hp.units']")
    return [int(text) for text in cells.all_inner_texts()]


def test_the_trials_table_is_built_when_scrolled_near(page: Page, seeded: Seeded) -> None:
    # Below every chart, the table is not built while the page loads, only once scrolled near.
    page.goto(f"{seeded.master.url}/#/experiments/{seeded.experiment_id}/visualization")
    page.wait_for_function("() => performance.getEntriesByName('pedl:charts-painted').length > 0")
    page.evaluate("() => new Promise((done) => requestIdleCallback(() => done(null)))")
    rows = page.get_by_test_id("summary-row")
    expect(rows).to_have_count(0)
    expect(_trials_table_count(page)).to_have_attribute("data-count", str(TRIALS))
    expect(rows).to_have_count(TRIALS)


def test_brushing_an_axis_filters_the_table(page: Page, seeded: Seeded) -> None:
    page.goto(f"{seeded.master.url}/#/experiments/{seeded.experiment_id}/visualization")
    count = _trials_table_count(page)
    expect(count).to_have_attribute("data-count", str(TRIALS))
    canvas = page.get_by_test_id("parallel-coordinates").locator("canvas.pc-overlay")
    canvas.scroll_into_view_if_needed()
    box = canvas.bounding_box()
    assert box is not None
    # Axes: lr, units, opt, then the metric; 56 px left and 84 px right of them, 46 above,
    # 22 below (parallel-coordinates.ts PAD).
    x = box["x"] + 56 + (box["width"] - 56 - 84) / 3
    top, middle = box["y"] + 40, box["y"] + 46 + (box["height"] - 46 - 22) / 2
    page.mouse.move(x, top)
    page.mouse.down()
    page.mouse.move(x, (top + middle) / 2)
    page.mouse.move(x, middle)
    page.mouse.up()
    expect(page.get_by_test_id("parallel-coordinates")).to_have_attribute("data-brushed", "1")
    expected = sorted(u for u in UNITS if u > 61)
    expect(_trials_table_count(page)).to_have_attribute("data-count", str(len(expected)))
    assert sorted(_summary_units(page)) == expected
    # Every other view: "N of M match", the others greyed in each scatter plot, the history and
    # the curves (all 30 drawn by default).
    outside = str(TRIALS - len(expected))
    expect(page.get_by_test_id("brush-count")).to_have_attribute("data-kept", str(len(expected)))
    expect(page.get_by_test_id("brush-count")).to_contain_text(
        f"{len(expected)} of {TRIALS} trials"
    )
    scatters = page.locator(".chart.scatter")
    expect(scatters).to_have_count(3)
    for scatter in scatters.all():
        expect(scatter).to_have_attribute("data-greyed", outside)
    expect(page.get_by_test_id("history")).to_have_attribute("data-greyed", outside)
    curves = page.get_by_test_id("learning-curves")
    expect(curves).to_have_attribute("data-series-count", str(TRIALS))
    expect(curves).to_have_attribute("data-greyed", outside)
    screenshot(page, "brushed")
    # The curves of the best N (10) inside the brushed ranges only.
    page.locator("#vis-curves").select_option("filtered")
    best_kept = sorted(t for t in seeded.trial_ids if seeded.units[t] > 61)
    best_kept = sorted(best_kept, key=lambda t: seeded.units[t])[:10]
    expect(curves).to_have_attribute("data-series-count", str(len(best_kept)))
    expect(curves).to_have_attribute("data-greyed", "0")
    legend = curves.locator(".chart-legend li").all_inner_texts()
    assert sorted(int(text.split()[1]) for text in legend) == sorted(best_kept)
    screenshot(page, "brushed-curves")


# The parallel coordinates' layout (parallel-coordinates.ts): PAD, the chart's height, and the
# axes in order (lr, units, opt, then the metric); opt's categories sorted by name.
PC_PAD = {"left": 56, "right": 84, "top": 46, "bottom": 22}
PC_HEIGHT = 340
OPT_CATEGORIES = ["adam", "rmsprop", "sgd"]
# Clicks this far right of the units axis (an axis' own 10 px start a brush, not a pick).
PC_CLICK_DX = 14


def _pc_line_y(box: FloatRect, units: int, opt: str) -> float:
    """Where trial (units, opt)'s line crosses x = units axis + PC_CLICK_DX, in page pixels."""
    plot_h = PC_HEIGHT - PC_PAD["top"] - PC_PAD["bottom"]
    spacing = (box["width"] - PC_PAD["left"] - PC_PAD["right"]) / 3
    y_units = PC_PAD["top"] + (1 - (units - 1) / 99) * plot_h
    y_opt = PC_PAD["top"] + (1 - OPT_CATEGORIES.index(opt) / 2) * plot_h
    return box["y"] + y_units + (y_opt - y_units) * PC_CLICK_DX / spacing


def _selected(page: Page) -> list[int]:
    """The selection in the URL (``selected=``)."""
    query = page.evaluate("() => location.hash.split('?')[1] ?? ''")
    values = [
        v for k, v in (p.split("=", 1) for p in query.split("&") if "=" in p) if k == "selected"
    ]
    return [int(i) for i in values[0].replace("%2C", ",").split(",")] if values else []


def test_select_three_trials_in_a_chart_and_compare(page: Page, seeded: Seeded) -> None:
    page.goto(f"{seeded.master.url}/#/experiments/{seeded.experiment_id}/visualization")
    parallel = page.get_by_test_id("parallel-coordinates")
    expect(parallel).to_have_attribute("data-trial-count", str(TRIALS))
    canvas = parallel.locator("canvas.pc-overlay")
    canvas.scroll_into_view_if_needed()

    def line_at(trial_id: int) -> tuple[float, float]:
        """Where trial_id's line is, from where the chart is now (a selection's bar above it
        may move it)."""
        box = canvas.bounding_box()
        assert box is not None
        x = (
            box["x"]
            + PC_PAD["left"]
            + (box["width"] - PC_PAD["left"] - PC_PAD["right"]) / 3
            + PC_CLICK_DX
        )
        return x, _pc_line_y(box, seeded.units[trial_id], seeded.opts[trial_id])

    ys = {t: line_at(t)[1] for t in seeded.trial_ids}
    # Three trials whose lines pass at least 4 px from every other line there.
    clear = [t for t in seeded.trial_ids if all(abs(ys[t] - ys[o]) >= 4 for o in ys if o != t)]
    picked = sorted(clear, key=lambda t: seeded.units[t])[:3]
    assert len(picked) == 3, f"no three lines apart: {ys}"
    page.mouse.click(*line_at(picked[0]))
    page.wait_for_function(f"() => location.hash.includes('selected={picked[0]}')")
    # As a user does, each click once the chart shows the one before, where the line is then
    # (under load a run lost both shift-clicks that followed at once, at the first positions).
    expect(parallel).to_have_attribute("data-selected", "1")
    for count, trial_id in enumerate(picked[1:], start=2):
        page.keyboard.down("Shift")
        page.mouse.click(*line_at(trial_id))
        page.keyboard.up("Shift")
        expect(parallel).to_have_attribute("data-selected", str(count))
    selection = page.get_by_test_id("vis-selection")
    expect(selection).to_have_attribute("data-count", "3")
    assert _selected(page) == sorted(picked)
    expect(parallel).to_have_attribute("data-selected", "3")
    # The table ticks the same trials.
    for trial_id in picked:
        row = page.locator(f"[data-testid=summary-row][data-trial-id='{trial_id}']")
        if row.count():
            expect(row.get_by_test_id("select-trial")).to_be_checked()
    # A shift-click on a selected line takes it out again; and back in.
    page.keyboard.down("Shift")
    page.mouse.click(*line_at(picked[2]))
    expect(selection).to_have_attribute("data-count", "2")
    page.mouse.click(*line_at(picked[2]))
    page.keyboard.up("Shift")
    expect(selection).to_have_attribute("data-count", "3")
    screenshot(page, "selected-in-chart")
    page.get_by_test_id("vis-compare").click()
    headers = page.get_by_test_id("compare-trial")
    expect(headers).to_have_count(3)
    assert [int(h.get_attribute("data-trial-id") or 0) for h in headers.all()] == sorted(picked)
    units = page.locator("[data-testid=compare-hparam][data-name=units] td").all_inner_texts()
    assert units == [str(seeded.units[t]) for t in sorted(picked)]


def _scatter(page: Page, name: str) -> Locator:
    return page.locator("figure.scatter-cell").filter(has=page.locator("figcaption", has_text=name))


def test_a_box_on_a_scatter_plot_selects_the_trials_inside(page: Page, seeded: Seeded) -> None:
    page.goto(f"{seeded.master.url}/#/experiments/{seeded.experiment_id}/visualization")
    figure = _scatter(page, "opt")
    expect(figure.locator(".chart.scatter")).to_have_attribute("data-points", str(TRIALS))
    over = figure.locator(".scatter-over")  # the plot area
    over.scroll_into_view_if_needed()
    box = over.bounding_box()
    assert box is not None

    # A categorical axis spans -0.6 .. categories - 0.4 (scatter.ts); adam (0) is jittered by at
    # most 0.25 either way: a box over -0.35 .. 0.35 and the whole height holds all of it.
    def px(value: float) -> float:
        return box["x"] + (value + 0.6) / 3.2 * box["width"]

    page.mouse.move(px(-0.35), box["y"] + 1)
    page.mouse.down()
    page.mouse.move(px(0), box["y"] + box["height"] / 2)
    page.mouse.move(px(0.35), box["y"] + box["height"] - 1)
    page.mouse.up()
    adam = sorted(t for t, opt in seeded.opts.items() if opt == "adam")
    expect(page.get_by_test_id("vis-selection")).to_have_attribute("data-count", str(len(adam)))
    assert _selected(page) == adam
    expect(figure.locator(".chart.scatter")).to_have_attribute("data-selected", str(len(adam)))
    expect(page.get_by_test_id("parallel-coordinates")).to_have_attribute(
        "data-selected", str(len(adam))
    )
    screenshot(page, "box-selected")


def test_sort_and_filter_by_a_hyperparameter(page: Page, seeded: Seeded) -> None:
    page.goto(f"{seeded.master.url}/#/experiments/{seeded.experiment_id}/visualization")
    expect(_trials_table_count(page)).to_have_attribute("data-count", str(TRIALS))
    page.get_by_test_id("sort-hp.units").click()
    expect(page.locator("[data-testid=summary-row]").first).to_contain_text("")
    page.wait_for_function("() => location.hash.includes('tsort=hp.units')")
    assert _summary_units(page) == sorted(UNITS)
    page.get_by_test_id("sort-hp.units").click()
    page.wait_for_function("() => location.hash.includes('tsort=-hp.units')")
    assert _summary_units(page) == sorted(UNITS, reverse=True)
    page.get_by_test_id("filter-hp.units").fill("20..39")
    page.get_by_test_id("filter-hp.units").press("Enter")
    expected = sorted((u for u in UNITS if 20 <= u <= 39), reverse=True)
    expect(page.get_by_test_id("summary-count")).to_have_attribute("data-count", str(len(expected)))
    assert _summary_units(page) == expected
    screenshot(page, "sorted-filtered")


def test_bulk_archive_from_the_list(page: Page, seeded: Seeded) -> None:
    http = seeded.master.http
    ids = []
    database = master_database(seeded.master)
    try:
        for name in ("ui-bulk-a", "ui-bulk-b", "ui-bulk-kept"):
            experiment_id, _ = ended_experiment(
                database,
                SEARCH,
                name=name,
                description="bulk",
                metric="val_loss",
                smaller_is_better=True,
                progress=0.0,
            )
            ids.append(experiment_id)
    finally:
        database.dispose()
    page.goto(f"{seeded.master.url}/#/experiments?name=ui-bulk")
    rows = page.get_by_test_id("experiment-row")
    expect(rows).to_have_count(3)
    for experiment_id in ids[:2]:
        row = page.locator(f"[data-testid=experiment-row][data-experiment-id='{experiment_id}']")
        row.get_by_test_id("select-experiment").check()
    page.get_by_test_id("bulk-archive").click()
    expect(page.get_by_test_id("bulk-message")).to_contain_text("archive: 2 done")
    expect(rows).to_have_count(1)  # archived ones are hidden unless asked for
    assert [http.get(f"/experiments/{i}").json()["archived"] for i in ids] == [True, True, False]
    page.get_by_test_id("filter-archived").check()
    expect(rows).to_have_count(3)
    screenshot(page, "bulk-archived")
