"""A population-based training search's lineage in the real Chromium, on an experiment seeded
straight into a master's database (no training): the experiment's lineage graph (each
trial's rounds joined, a dashed line from a parent's round to its copy's) and, on a copy's
own page, its parent, the checkpoint's batch and the hyperparameters it changed."""

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

ROUND = 10
CONFIG = f"""\
name: ui-pbt-lineage
entrypoint: model_def:MyTrial
hyperparameters:
  lr: {{type: double, minval: 0.001, maxval: 0.1}}
searcher:
  name: pbt
  metric: val_accuracy
  smaller_is_better: false
  population_size: 2
  num_rounds: 2
  length_per_round: {{batches: {ROUND}}}
  replace_function: {{truncate_fraction: 0.5}}
  explore_function: {{resample_probability: 0.0, perturb_factor: 0.2}}
"""


@dataclass(frozen=True)
class Seeded:
    master: MasterProcess
    experiment: int
    parent: int
    replaced: int
    copy: int


def seed(database: Database) -> tuple[int, int, int, int]:
    """Round 1: trials A (0.90) and B (0.50); B is replaced by C, a copy of A from A's
    checkpoint at batch 10 with lr perturbed. Round 2: A 0.95, C 0.93."""
    experiment_id, _ = ended_experiment(
        database, CONFIG, name="ui-pbt-lineage", metric="val_accuracy", smaller_is_better=False
    )

    def trial(request: str, lr: float, batches: int, **lineage: object) -> dict[str, object]:
        return {
            "experiment_id": experiment_id,
            "request_id": f"ui-pbt-{request}",
            "hparams": {"lr": lr},
            "seed": len(request),
            "state": TrialState.COMPLETED,
            "total_batches": batches,
            "outcome": "COMPLETED",
            "token_hash": secrets.token_hex(32),
            "warm_start_checkpoint_uuid": None,
            "parent_trial_id": None,
            "parent_batches": None,
            "changed_hparams": None,
            **lineage,
        }

    with database.session(write=True) as session:
        a, b = session.scalars(
            insert(Trial).returning(Trial.id),
            [trial("a", 0.01, 2 * ROUND), trial("b", 0.05, ROUND)],
        ).all()
        (c,) = session.scalars(
            insert(Trial).returning(Trial.id),
            [
                trial(
                    "c",
                    0.012,
                    ROUND,
                    warm_start_checkpoint_uuid="0f1e2d3c-0000-4000-8000-000000000001",
                    parent_trial_id=a,
                    parent_batches=ROUND,
                    changed_hparams={"lr": {"from": 0.01, "to": 0.012}},
                )
            ],
        ).all()
        now = datetime.now(UTC)
        session.execute(
            insert(Metric.__table__),
            [
                {
                    "trial_id": trial_id,
                    "kind": MetricKind.VALIDATION,
                    "total_batches": batches,
                    "metrics": {"val_accuracy": value},
                    "reported_at": now,
                }
                for trial_id, batches, value in [
                    (a, ROUND, 0.90),
                    (a, 2 * ROUND, 0.95),
                    (b, ROUND, 0.50),
                    (c, ROUND, 0.93),  # the copy's own batch 10: round 2
                ]
            ],
        )
    return experiment_id, a, b, c


@pytest.fixture(scope="module")
def seeded(chromium_path: object, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Seeded]:
    with seeded_master(tmp_path_factory, "ui-pbt") as (master, database):
        yield Seeded(master, *seed(database))


@pytest.fixture
def page(browser: Browser, seeded: Seeded) -> Iterator[Page]:
    with signed_in_tab(browser, seeded.master) as tab:
        yield tab


def test_the_overview_draws_the_population_by_round_with_its_copies(
    page: Page, seeded: Seeded
) -> None:
    page.goto(f"{seeded.master.url}/#/experiments/{seeded.experiment}")
    graph = page.locator("svg.pbt-lineage")
    expect(graph).to_be_visible()
    # A at rounds 1 and 2, B at round 1, C (A's copy) at round 2
    dots = graph.locator("circle")
    expect(dots).to_have_count(4)
    titles = sorted(dots.locator("title").all_text_contents())
    assert titles == sorted(
        [
            f"trial {seeded.parent}, round 1: val_accuracy 0.9",
            f"trial {seeded.parent}, round 2: val_accuracy 0.95",
            f"trial {seeded.replaced}, round 1: val_accuracy 0.5",
            f"trial {seeded.copy}, round 2: val_accuracy 0.93",
        ]
    ), titles
    # A's own rounds joined, and one dashed line from A's round 1 to its copy
    expect(graph.locator("line")).to_have_count(2)
    expect(graph.locator("line[stroke-dasharray]")).to_have_count(1)
    expect(graph.locator("text", has_text="round 2")).to_have_count(1)
    screenshot(page, "pbt-lineage")


def test_a_copy_s_page_names_its_parent_checkpoint_and_changes(page: Page, seeded: Seeded) -> None:
    page.goto(f"{seeded.master.url}/#/trials/{seeded.copy}")
    note = page.get_by_test_id("trial-parent")
    expect(note).to_contain_text(f"trial {seeded.parent} at batch 10")
    expect(note).to_contain_text("checkpoint 0f1e2d3c")
    expect(note).to_contain_text("lr 0.01 → 0.012")
    note.get_by_role("link", name=f"trial {seeded.parent}").click()
    expect(page).to_have_url(f"{seeded.master.url}/#/trials/{seeded.parent}")
    # a trial drawn afresh has no parent
    expect(page.get_by_test_id("trial-parent")).to_have_count(0)
