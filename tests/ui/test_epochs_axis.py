"""The learning curves' "Epochs" axis, in the real Chromium, on an experiment seeded straight
into the master's database (no training): its trial's metric rows carry the epochs the trial
counted (a script's ``fit`` epochs, two stages of different batch sizes) and its config no
``records_per_epoch``, so the points are drawn at those epochs; an experiment whose rows have
no epochs and whose config cannot convert batches says so."""

from __future__ import annotations

import math
import secrets
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime

import pytest
from playwright.sync_api import Browser, Locator, Page, expect
from sqlalchemy import insert

from pedl.db import Metric, Trial
from pedl.vocabulary import MetricKind, TrialState
from tests.master.e2e import MasterProcess
from tests.waits import scaled

from .conftest import ended_experiment, screenshot, seeded_master, signed_in_tab

pytestmark = [pytest.mark.browser, pytest.mark.slow]

CONFIG = """\
name: {name}
entrypoint: python3 train.py
searcher: {{name: single, metric: val_loss}}
"""
# (batches, epochs, val_loss): 2 epochs of 8 batches, then 2 of 4 (a fine-tuning fit).
ROWS = [(8, 1.0, 0.9), (16, 2.0, 0.8), (20, 3.0, 0.7), (24, 4.0, 0.6)]


@dataclass(frozen=True)
class Seeded:
    master: MasterProcess
    with_epochs: int
    """An experiment whose rows carry their epochs."""
    without: int
    """One whose rows carry none, and whose config has no records_per_epoch."""


@pytest.fixture(scope="module")
def seeded(chromium_path: object, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Seeded]:
    with seeded_master(tmp_path_factory, "ui-epochs") as (master, database):
        ids = []
        for name, epochs in (("with-epochs", True), ("without-epochs", False)):
            experiment_id, start = ended_experiment(
                database,
                CONFIG.format(name=name),
                name=name,
                metric="val_loss",
                smaller_is_better=True,
            )
            trial = {
                "experiment_id": experiment_id,
                "request_id": f"ui-epochs-{name}",
                "hparams": {},
                "seed": 1,
                "state": TrialState.COMPLETED,
                "total_batches": 24,
                "best_validation": 0.6,
                "outcome": "COMPLETED",
                "token_hash": secrets.token_hex(32),
                "created_at": start,
                "ended_at": start,
            }
            with database.session(write=True) as session:
                trial_id = session.scalar(insert(Trial).returning(Trial.id), [trial])
                rows = [
                    {
                        "trial_id": trial_id,
                        "kind": MetricKind.VALIDATION,
                        "total_batches": batches,
                        "total_epochs": epoch if epochs else None,
                        "metrics": {"val_loss": loss},
                        "reported_at": datetime.now(UTC),
                    }
                    for batches, epoch, loss in ROWS
                ]
                session.execute(insert(Metric.__table__), rows)
            ids.append(experiment_id)
        yield Seeded(master, ids[0], ids[1])


@pytest.fixture
def page(browser: Browser, seeded: Seeded) -> Iterator[Page]:
    with signed_in_tab(browser, seeded.master) as tab:
        yield tab


def x_range_covers(curves: Locator, low: float, high: float) -> tuple[float, float]:
    """Wait until the chart's x scale (``data-x-range``, padded around the points) holds
    ``low..high`` and nothing below ``low - 1`` or above ``high + 1``; return it."""
    deadline = time.monotonic() + scaled(20)
    while True:
        text = curves.get_attribute("data-x-range") or ""
        try:
            start, end = (float(v) for v in text.split(","))
        except ValueError:
            start, end = math.nan, math.nan
        if low - 1 <= start <= low and high <= end <= high + 1:
            return start, end
        assert time.monotonic() < deadline, f"x range {text!r}, not around {low}..{high}"
        time.sleep(0.05)


def test_the_epochs_axis_draws_each_rows_stored_epochs(page: Page, seeded: Seeded) -> None:
    base = f"{seeded.master.url}/#/experiments/{seeded.with_epochs}/visualization"
    page.goto(base)
    curves = page.get_by_test_id("learning-curves")
    expect(curves).to_have_attribute("data-series-count", "1")
    x_range_covers(curves, 8, 24)  # batches
    page.locator("#vis-x").select_option("epochs")
    # The same trial, now from its first row's epoch to its last's: no config field says
    # how many batches an epoch is (they changed between the two stages).
    curves = page.get_by_test_id("learning-curves")
    x_range_covers(curves, 1, 4)
    expect(curves).to_have_attribute("data-series-count", "1")
    screenshot(page, "epochs-axis")


def test_an_epochs_axis_without_epochs_says_why(page: Page, seeded: Seeded) -> None:
    page.goto(f"{seeded.master.url}/#/experiments/{seeded.without}/visualization?x=epochs")
    curves = page.get_by_test_id("learning-curves")
    expect(curves).to_contain_text("does not say how many batches make an epoch")
    expect(curves).to_have_attribute("data-series-count", "0")
