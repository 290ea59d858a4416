"""The Pareto front of a multi-objective search in the real Chromium, on experiments seeded
straight into a master's database (no training): two objectives drawn as a scatter with the
front joined (a click on a front trial selects it), three as parallel coordinates."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime

import pytest
from playwright.sync_api import Browser, Page, expect
from sqlalchemy import insert

from pedl.db import Database, Metric, Trial
from pedl.vocabulary import MetricKind, TrialState
from tests.master.e2e import MasterProcess

from .conftest import ended_experiment, screenshot, seeded_master, signed_in_tab

pytestmark = [pytest.mark.browser, pytest.mark.slow]

CONFIG = """\
name: ui-pareto-{count}
entrypoint: model_def:MyTrial
hyperparameters:
  units: {{type: int, minval: 1, maxval: 100}}
searcher:
  name: random
  max_trials: 6
  max_length: {{batches: 10}}
  metrics:
    - {{name: val_accuracy, smaller_is_better: false}}
    - {{name: val_params, smaller_is_better: true}}
{extra}"""
THIRD = "    - {name: val_latency, smaller_is_better: true}\n"

# (val_accuracy, val_params, val_latency): trials 0, 1 and 3 make the two-objective front
RESULTS = [
    (0.95, 900.0, 3.0),
    (0.80, 100.0, 1.0),
    (0.70, 500.0, 2.0),
    (0.90, 400.0, 2.5),
    (0.60, 950.0, 9.0),
    (0.50, 800.0, 8.0),
]


@dataclass(frozen=True)
class Seeded:
    master: MasterProcess
    two: int
    three: int
    trial_ids: dict[int, list[int]]


def seed(database: Database, count: int) -> tuple[int, list[int]]:
    text = CONFIG.format(count=count, extra=THIRD if count == 3 else "")
    experiment_id, _ = ended_experiment(
        database, text, name=f"ui-pareto-{count}", metric="val_accuracy", smaller_is_better=False
    )
    rows = [
        {
            "experiment_id": experiment_id,
            "request_id": f"ui-pareto-{count}-{index}",
            "hparams": {"units": index + 1},
            "seed": index,
            "state": TrialState.COMPLETED,
            "total_batches": 10,
            "outcome": "COMPLETED",
            "token_hash": secrets.token_hex(32),
        }
        for index in range(len(RESULTS))
    ]
    with database.session(write=True) as session:
        ids = list(session.scalars(insert(Trial).returning(Trial.id), rows))
        metrics = [
            {
                "trial_id": trial_id,
                "kind": MetricKind.VALIDATION,
                "total_batches": 10,
                "metrics": {"val_accuracy": acc, "val_params": params, "val_latency": latency},
                "reported_at": datetime.now(UTC),
            }
            for trial_id, (acc, params, latency) in zip(ids, RESULTS, strict=True)
        ]
        session.execute(insert(Metric.__table__), metrics)
    return experiment_id, ids


@pytest.fixture(scope="module")
def seeded(chromium_path: object, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Seeded]:
    with seeded_master(tmp_path_factory, "ui-pareto") as (master, database):
        two, two_ids = seed(database, 2)
        three, three_ids = seed(database, 3)
        yield Seeded(master, two, three, {two: two_ids, three: three_ids})


@pytest.fixture
def page(browser: Browser, seeded: Seeded) -> Iterator[Page]:
    with signed_in_tab(browser, seeded.master) as tab:
        yield tab


def test_two_objectives_draw_a_scatter_with_the_front_joined(page: Page, seeded: Seeded) -> None:
    ids = seeded.trial_ids[seeded.two]
    page.goto(f"{seeded.master.url}/#/experiments/{seeded.two}/visualization")
    card = page.get_by_test_id("pareto-card")
    chart = card.get_by_test_id("pareto-scatter")
    expect(chart).to_be_visible()
    points = chart.locator(".pareto-point")
    expect(points).to_have_count(len(RESULTS))
    front = chart.locator('.pareto-point[data-front="true"]')
    expect(front).to_have_count(3)
    drawn = sorted(int(p.get_attribute("data-trial") or 0) for p in front.all())
    assert drawn == sorted([ids[0], ids[1], ids[3]])
    expect(chart.get_by_test_id("pareto-line")).to_have_count(1)
    expect(card.get_by_test_id("pareto-caption")).to_contain_text("The front: 3 trials")
    chart.locator(f'.pareto-point[data-trial="{ids[1]}"]').click()
    expect(page.get_by_test_id("vis-selection")).to_have_attribute("data-count", "1")
    assert f"selected={ids[1]}" in page.url
    screenshot(page, "pareto-front")


def test_three_objectives_draw_parallel_coordinates(page: Page, seeded: Seeded) -> None:
    page.goto(f"{seeded.master.url}/#/experiments/{seeded.three}/visualization")
    chart = page.get_by_test_id("pareto-card").get_by_test_id("pareto-parallel")
    expect(chart).to_be_visible()
    expect(chart.locator(".pareto-point")).to_have_count(len(RESULTS))
    # latency changes nothing here: 2 is still dominated by 1, 4 by 0, 5 by 3
    expect(chart.locator('.pareto-point[data-front="true"]')).to_have_count(3)
    axes = chart.locator("text").all_text_contents()
    assert {"val_accuracy", "val_params", "val_latency"} <= set(axes)
