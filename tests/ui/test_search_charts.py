"""The search at a glance, in the real Chromium, on an experiment seeded straight into the
master's database (no training): hyperparameter importance, the optimization history and
the timeline drawn with the values seeded; three trials compared from a URL; brushing an axis
of the parallel coordinates filters the trials table; sorting and filtering it by a
hyperparameter; archiving experiments in bulk from the list."""

from __future__ import annotations

import random
import secrets
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import pytest
from playwright.sync_api import Browser, Page, expect
from sqlalchemy import insert

from pedl.config import parse_config
from pedl.engine import ExperimentState, MetricKind, TrialState
from pedl.master.db import Database, LogLine, Metric, Trial
from pedl.master.db import experiments as experiments_repo
from pedl.master.db import logs as logs_repo
from pedl.master.db.search_history import ATTEMPT_EXITED, ATTEMPT_STARTED, MASTER_STREAM
from tests.master.e2e import MasterProcess

from .conftest import screenshot, sign_in_context

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


@pytest.fixture(scope="module")
def seeded(chromium_path: object, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Seeded]:
    """A master of its own (no trial runs on it) with the experiment written into its
    database."""
    master = MasterProcess(tmp_path_factory.mktemp("ui-search"), cpu_slots=1).start()
    database = Database(f"sqlite:///{master.home / 'pedl' / 'pedl.db'}")
    rng = random.Random(11)
    try:
        with database.session(write=True) as session:
            experiment = experiments_repo.create_experiment(
                session,
                config=parse_config(SEARCH).as_dict(),
                config_text=SEARCH,
                model_definition=b"",
                owner="admin",
                name="ui-search",
                description="seeded for the search charts",
                labels=["ui-search"],
                searcher_metric="val_loss",
                smaller_is_better=True,
            )
            # Ended before the master sees it: its orchestrator starts no searcher for it.
            experiment.state = ExperimentState.COMPLETED
            experiment.progress = 1.0
            experiment_id, start = experiment.id, experiment.created_at
        trials, metrics = [], []
        for index, units in enumerate(UNITS):
            loss = units / 100
            trials.append(
                {
                    "experiment_id": experiment_id,
                    "request_id": f"ui-search-{index}",
                    "hparams": {
                        "lr": 10 ** rng.uniform(-4, -1),
                        "units": units,
                        "opt": rng.choice(["adam", "sgd", "rmsprop"]),
                    },
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
        yield Seeded(master, experiment_id, ids, dict(zip(ids, UNITS, strict=True)))
    finally:
        database.dispose()
        master.stop()


@pytest.fixture
def page(browser: Browser, seeded: Seeded) -> Iterator[Page]:
    """A tab signed in to the seeded master (conftest's ``page`` is of the trained
    experiments' master)."""
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    context.set_default_timeout(20_000)
    sign_in_context(context, seeded.master)
    tab = context.new_page()
    errors: list[str] = []
    tab.on("pageerror", lambda err: errors.append(str(err)))
    try:
        yield tab
    finally:
        context.close()
    assert errors == [], f"JavaScript errors on the page: {errors}"


def test_importance_history_and_timeline(page: Page, seeded: Seeded) -> None:
    page.goto(f"{seeded.master.url}/#/experiments/{seeded.experiment_id}/visualization")
    importance = page.get_by_test_id("importance")
    expect(importance).to_have_attribute("data-ready", "true", timeout=120_000)
    expect(importance).to_have_attribute("data-trials", str(TRIALS))
    bars = importance.get_by_test_id("importance-bar")
    expect(bars).to_have_count(3)
    assert bars.first.get_attribute("data-name") == "units"
    assert float(bars.first.get_attribute("data-importance") or 0) > 0.5
    history = page.get_by_test_id("history")
    expect(history).to_have_attribute("data-trial-count", str(TRIALS))
    assert float(history.get_attribute("data-best") or "nan") == pytest.approx(0.01)
    # In the order they ended (trial i at 10 i + 15 s): the best so far falls as they come.
    rows = history.locator("tbody tr")
    first = rows.first.locator("td").all_inner_texts()
    assert first[0] == str(seeded.trial_ids[0]) and first[2] == "0.01"
    timeline = page.get_by_test_id("timeline")
    expect(timeline).to_have_attribute("data-attempt-count", str(TRIALS))
    expect(timeline).to_have_attribute("data-slots", "2")  # each ran 15 s, one started every 10 s
    slots = [r.locator("td").nth(1).inner_text() for r in timeline.locator("tbody tr").all()[:4]]
    assert slots == ["0", "1", "0", "1"]
    page.wait_for_function("performance.getEntriesByName('pedl:charts-painted').length > 0")
    screenshot(page, "search-charts")


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


def _summary_units(page: Page) -> list[int]:
    cells = page.locator("[data-testid=summary-row] td[data-column='hp.units']")
    return [int(text) for text in cells.all_inner_texts()]


def test_brushing_an_axis_filters_the_table(page: Page, seeded: Seeded) -> None:
    page.goto(f"{seeded.master.url}/#/experiments/{seeded.experiment_id}/visualization")
    count = page.get_by_test_id("summary-count")
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
    expect(count).to_have_attribute("data-count", str(len(expected)))
    assert sorted(_summary_units(page)) == expected
    screenshot(page, "brushed")


def test_sort_and_filter_by_a_hyperparameter(page: Page, seeded: Seeded) -> None:
    page.goto(f"{seeded.master.url}/#/experiments/{seeded.experiment_id}/visualization")
    expect(page.get_by_test_id("summary-count")).to_have_attribute("data-count", str(TRIALS))
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
    database = Database(f"sqlite:///{seeded.master.home / 'pedl' / 'pedl.db'}")
    try:
        for name in ("ui-bulk-a", "ui-bulk-b", "ui-bulk-kept"):
            with database.session(write=True) as session:
                experiment = experiments_repo.create_experiment(
                    session,
                    config=parse_config(SEARCH).as_dict(),
                    config_text=SEARCH,
                    model_definition=b"",
                    owner="admin",
                    name=name,
                    description="bulk",
                    labels=[],
                    searcher_metric="val_loss",
                    smaller_is_better=True,
                )
                experiment.state = ExperimentState.COMPLETED
                ids.append(experiment.id)
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
