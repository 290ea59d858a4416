"""The trials tab and the experiment list sorted and filtered on the master, in the real
Chromium, on experiments seeded straight into the master's database (no training): the
trials tab by a hyperparameter and by a metric (its latest value), with filters of both, the
state in the URL; the experiment list sorted by duration and filtered by description. And
the trials tab's bulk kill, of a real trial training on that master."""

from __future__ import annotations

import random
import secrets
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import pytest
from playwright.sync_api import Browser, Page, expect
from sqlalchemy import insert

from pedl.db import Database, Metric, Trial
from pedl.db import experiments as experiments_repo
from pedl.vocabulary import MetricKind, TrialState
from tests.master.e2e import MasterProcess, create_experiment, trials, wait_for
from tests.waits import scaled

from .conftest import config, ended_experiment, screenshot, seeded_master, signed_in_tab

pytestmark = [pytest.mark.browser, pytest.mark.slow]

SEARCH = """\
name: ui-tables
entrypoint: model_def:MyTrial
hyperparameters:
  lr: {type: log, minval: -4, maxval: -1}
  units: {type: int, minval: 1, maxval: 100}
  opt: {type: categorical, vals: [adam, sgd, rmsprop]}
searcher: {name: random, metric: val_loss, smaller_is_better: true, max_trials: 12,
           max_length: {batches: 30}}
"""
UNITS = random.Random(3).sample(range(1, 101), 12)
OPTS = ["adam", "sgd", "rmsprop"] * 4
# The experiment list's rows: name, description, hours since creation, hours it lasted
# (None: still running).
LISTED = [
    ("ui-table-a", "wide resnet", 6, 1.0),
    ("ui-table-b", "narrow net", 5, None),
    ("ui-table-c", "wide mlp", 4, 0.25),
]


@dataclass(frozen=True)
class Seeded:
    master: MasterProcess
    experiment_id: int
    units: dict[int, int]
    """Trial id: its units."""
    opts: dict[int, str]
    listed: list[int]
    """The ids of :data:`LISTED`'s experiments."""


def _experiment(database: Database, name: str, description: str) -> int:
    experiment_id, _ = ended_experiment(
        database,
        SEARCH,
        name=name,
        description=description,
        metric="val_loss",
        smaller_is_better=True,
        progress=0.0,
    )
    return experiment_id


@pytest.fixture(scope="module")
def seeded(chromium_path: object, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Seeded]:
    """A master of its own (no trial runs on it) with the experiments written into its
    database: one of 12 trials whose latest val_acc is 1 - units/100 (an earlier one is 0.5
    for all), and three for the list with known descriptions and durations."""
    rng = random.Random(7)
    with seeded_master(tmp_path_factory, "ui-tables") as (master, database):
        experiment_id = _experiment(database, "ui-tables", "seeded for the trials tab")
        now = datetime.now(UTC)
        trials = [
            {
                "experiment_id": experiment_id,
                "request_id": f"ui-tables-{index}",
                "hparams": {"lr": 10 ** rng.uniform(-4, -1), "units": units, "opt": OPTS[index]},
                "seed": index,
                "state": TrialState.COMPLETED,
                "total_batches": 30,
                "best_validation": units / 100,
                "outcome": "COMPLETED",
                "token_hash": secrets.token_hex(32),
                "created_at": now - timedelta(minutes=30),
                "ended_at": now - timedelta(minutes=index),
            }
            for index, units in enumerate(UNITS)
        ]
        with database.session(write=True) as session:
            ids = list(session.scalars(insert(Trial).returning(Trial.id), trials))
            metrics = [
                {
                    "trial_id": trial_id,
                    "kind": MetricKind.VALIDATION,
                    "total_batches": 10 * step,
                    "metrics": {
                        "val_loss": units / 100 + (2 - step) * 0.1,
                        "val_acc": 0.5 if step == 1 else 1 - units / 100,
                    },
                    "reported_at": now,
                }
                for trial_id, units in zip(ids, UNITS, strict=True)
                for step in (1, 2)
            ]
            session.execute(insert(Metric.__table__), metrics)
        listed = []
        for name, description, age, lasted in LISTED:
            listed_id = _experiment(database, name, description)
            with database.session(write=True) as session:
                row = experiments_repo.get_experiment(session, listed_id)
                row.created_at = now - timedelta(hours=age)
                if lasted is None:
                    # No end: its duration runs to now (a live state would have the master's
                    # orchestrator adopt it and start its search).
                    row.ended_at = None
                else:
                    row.ended_at = now - timedelta(hours=age - lasted)
            listed.append(listed_id)
        yield Seeded(
            master,
            experiment_id,
            dict(zip(ids, UNITS, strict=True)),
            dict(zip(ids, OPTS, strict=True)),
            listed,
        )


@pytest.fixture
def page(browser: Browser, seeded: Seeded) -> Iterator[Page]:
    """A tab signed in to the seeded master."""
    with signed_in_tab(browser, seeded.master, width=1600) as tab:
        yield tab


def _trial_ids(page: Page) -> list[int]:
    rows = page.get_by_test_id("trial-row")
    return [int(r.get_attribute("data-trial-id") or 0) for r in rows.all()]


def _settled(page: Page, expected: list[int]) -> None:
    """Wait until the table shows ``expected`` trials, then check their order."""
    expect(page.get_by_test_id("trial-row")).to_have_count(len(expected))
    expect(page.get_by_test_id("trial-row").first).to_have_attribute(
        "data-trial-id", str(expected[0])
    )
    assert _trial_ids(page) == expected


def test_sort_and_filter_trials_by_a_hyperparameter(page: Page, seeded: Seeded) -> None:
    page.goto(f"{seeded.master.url}/#/experiments/{seeded.experiment_id}/trials")
    by_units = sorted(seeded.units, key=lambda t: seeded.units[t])
    expect(page.get_by_test_id("trial-row")).to_have_count(len(UNITS))
    page.get_by_role("button", name="Sort by units").click()
    page.wait_for_function("() => location.hash.includes('sort=hparams.units')")
    _settled(page, by_units)
    page.get_by_role("button", name="Sort by units, sorted ascending").click()
    page.wait_for_function("() => location.hash.includes('sort=-hparams.units')")
    _settled(page, by_units[::-1])
    box = page.get_by_test_id("trials-filter-hparams.units")
    box.fill("20..60")
    box.press("Enter")
    page.wait_for_function(
        "() => decodeURIComponent(location.hash).includes('range=hparams.units:20..60')"
    )
    _settled(page, [t for t in by_units[::-1] if 20 <= seeded.units[t] <= 60])
    opt = page.get_by_test_id("trials-filter-hparams.opt")
    opt.fill("adam, sgd")
    opt.press("Enter")
    kept = [
        t for t in by_units[::-1] if 20 <= seeded.units[t] <= 60 and seeded.opts[t] != "rmsprop"
    ]
    _settled(page, kept)
    screenshot(page, "trials-hparam-filtered")
    # The URL holds it all: a reload shows the same rows and filter boxes.
    page.reload()
    _settled(page, kept)
    expect(page.get_by_test_id("trials-filter-hparams.units")).to_have_value("20..60")
    expect(page.get_by_test_id("trials-filter-hparams.opt")).to_have_value("adam, sgd")
    page.get_by_test_id("clear-trial-filters").click()
    expect(page.get_by_test_id("trial-row")).to_have_count(len(UNITS))


def test_sort_and_filter_trials_by_a_metric(page: Page, seeded: Seeded) -> None:
    page.goto(f"{seeded.master.url}/#/experiments/{seeded.experiment_id}/trials")
    # The latest val_acc is 1 - units/100: ascending by it is descending by units.
    by_acc = sorted(seeded.units, key=lambda t: -seeded.units[t])
    page.get_by_role("button", name="Sort by val_acc").click()
    page.wait_for_function("() => location.hash.includes('sort=metrics.val_acc')")
    _settled(page, by_acc)
    first = page.get_by_test_id("trial-row").first
    expect(first).to_contain_text(f"{1 - seeded.units[by_acc[0]] / 100:.2f}".rstrip("0"))
    box = page.get_by_test_id("trials-filter-metrics.val_acc")
    box.fill("0.6..")
    box.press("Enter")
    _settled(page, [t for t in by_acc if 1 - seeded.units[t] / 100 >= 0.6])
    screenshot(page, "trials-metric-filtered")


def test_experiment_list_sorted_by_duration_and_filtered_by_description(
    page: Page, seeded: Seeded
) -> None:
    a, b, c = seeded.listed
    page.goto(f"{seeded.master.url}/#/experiments?name=ui-table-")
    rows = page.get_by_test_id("experiment-row")
    expect(rows).to_have_count(3)
    page.get_by_role("button", name="Sort by Duration").click()
    page.wait_for_function("() => location.hash.includes('sort=duration')")
    # The newest first (the default) is c, b, a: wait for a, the middle one, to move up.
    expect(rows.nth(1)).to_have_attribute("data-experiment-id", str(a))
    assert [r.get_attribute("data-experiment-id") for r in rows.all()] == [str(c), str(a), str(b)]
    page.locator("#filter-description").fill("WIDE")
    page.wait_for_function("() => location.hash.includes('description=WIDE')")
    expect(rows).to_have_count(2)
    assert [r.get_attribute("data-experiment-id") for r in rows.all()] == [str(c), str(a)]
    page.get_by_role("button", name="Sort by Labels").click()
    page.wait_for_function("() => location.hash.includes('sort=labels')")
    screenshot(page, "experiments-by-duration")
    # The boxes under the headers: durations and percentages as the columns show them.
    page.locator("#filter-description").fill("")
    duration = page.get_by_test_id("experiments-filter-duration")
    duration.fill("30m..2h")
    duration.press("Enter")
    page.wait_for_function(
        "() => decodeURIComponent(location.hash).includes('range=duration:1800..7200')"
    )
    expect(rows).to_have_count(1)
    expect(rows.first).to_have_attribute("data-experiment-id", str(a))  # 1 h
    page.reload()
    expect(page.get_by_test_id("experiments-filter-duration")).to_have_value("30m..2h")
    page.get_by_test_id("experiments-filter-progress").fill("50%..")
    page.get_by_test_id("experiments-filter-progress").press("Enter")
    expect(page.get_by_text("No experiment matches these filters.")).to_be_visible()


def test_bulk_kill_from_the_trials_tab(page: Page, seeded: Seeded) -> None:
    http = seeded.master.http
    slow = "{name: single, metric: val_loss, max_length: {batches: 100000}}"
    experiment_id = create_experiment(
        http, config("ui-tables-kill", slow, lr="0.01", unit=2, env=["PEDL_TEST_SLEEP=0.05"])
    )
    deadline = time.monotonic() + scaled(240)
    while not any(t["state"] == "RUNNING" for t in trials(http, experiment_id)):
        assert time.monotonic() < deadline, seeded.master.log()[-3000:]
        time.sleep(0.5)
    (trial,) = trials(http, experiment_id)
    page.goto(f"{seeded.master.url}/#/experiments/{experiment_id}/trials")
    row = page.locator(f"[data-testid=trial-row][data-trial-id='{trial['id']}']")
    expect(row.get_by_test_id("trial-state")).to_have_attribute("data-state", "RUNNING")
    row.get_by_test_id("select-trial").check()
    page.get_by_test_id("bulk-kill-trials").click()
    page.get_by_test_id("confirm-yes").click()
    expect(page.get_by_test_id("bulk-message")).to_have_text("kill: 1 done.")
    wait_for(http, experiment_id, {"CANCELED", "COMPLETED"}, timeout=120, master=seeded.master)
    (killed,) = trials(http, experiment_id)
    assert (killed["state"], killed["outcome"]) == ("CANCELED", "KILLED")
    expect(row.get_by_test_id("trial-state")).to_have_attribute("data-state", "CANCELED")
    expect(row.get_by_test_id("outcome-note")).to_have_text("killed")
