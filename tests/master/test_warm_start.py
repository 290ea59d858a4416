"""Warm starts on a real master: ``searcher.source_trial_id`` / ``source_checkpoint_uuid``."""

from __future__ import annotations

import base64
from collections.abc import Iterator

import pytest

from pedl import model_def
from tests.master.e2e import (
    MODEL_DIR,
    MasterProcess,
    create_experiment,
    logs,
    metric_rows,
    trials,
    wait_for,
)

pytestmark = pytest.mark.slow

CONFIG = """
name: {name}
hyperparameters: {{global_batch_size: 16, lr: 0.05}}
searcher: {{name: single, metric: val_accuracy, smaller_is_better: false,
           max_length: {{batches: {length}}}{source}}}
scheduling_unit: 10
min_validation_period: {{batches: 10}}
perform_initial_validation: {initial}
reproducibility: {{experiment_seed: 3}}
"""


def config(name: str, length: int, source: str = "", *, initial: bool = False) -> str:
    return CONFIG.format(name=name, length=length, source=source, initial=str(initial).lower())


@pytest.fixture(scope="module")
def master(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MasterProcess]:
    process = MasterProcess(tmp_path_factory.mktemp("master")).start()
    try:
        yield process
    finally:
        process.stop()


def test_every_new_trial_starts_from_the_source_weights_with_counters_at_zero(
    master: MasterProcess,
) -> None:
    source_id = create_experiment(master.http, config("source", 20))
    wait_for(master.http, source_id, {"COMPLETED"}, timeout=180, master=master)
    (source,) = trials(master.http, source_id)
    source_rows = metric_rows(master.http, source["id"])
    last_validation = [m for kind, b, m in source_rows if kind == "validation" and b == 20]
    assert last_validation, source_rows

    by_trial = ", source_trial_id: {}".format(source["id"])
    warm_id = create_experiment(master.http, config("warm", 10, by_trial, initial=True))
    wait_for(master.http, warm_id, {"COMPLETED"}, timeout=180, master=master)
    (warm,) = trials(master.http, warm_id)
    text = logs(master.http, warm["id"])
    assert f"warm start: weights from checkpoint {source['latest_checkpoint_uuid']}" in text
    rows = metric_rows(master.http, warm["id"])
    # The initial validation, before any training, scores the source's final weights.
    initial = [m for kind, b, m in rows if kind == "validation" and b == 0]
    assert initial == last_validation
    # Its own counters start at 0: it trains batches 1..10, not 21..30.
    assert max(b for _, b, _ in rows) == 10
    assert warm["total_batches"] == 10

    # The same, naming the checkpoint itself; and a fresh start scores differently.
    by_uuid = ", source_checkpoint_uuid: {}".format(source["latest_checkpoint_uuid"])
    again_id = create_experiment(master.http, config("warm-uuid", 10, by_uuid, initial=True))
    fresh_id = create_experiment(master.http, config("fresh", 10, initial=True))
    for experiment_id in (again_id, fresh_id):
        wait_for(master.http, experiment_id, {"COMPLETED"}, timeout=180, master=master)
    (again,) = trials(master.http, again_id)
    (fresh,) = trials(master.http, fresh_id)
    assert metric_rows(master.http, again["id"]) == rows
    fresh_initial = [
        m for kind, b, m in metric_rows(master.http, fresh["id"]) if kind == "validation" and b == 0
    ]
    assert fresh_initial != last_validation


@pytest.mark.parametrize(
    ("source", "field", "message"),
    [
        (", source_trial_id: 999999", "source_trial_id", "there is no trial 999999"),
        (
            ", source_checkpoint_uuid: 00000000-0000-4000-8000-000000000000",
            "source_checkpoint_uuid",
            "there is no such checkpoint",
        ),
        (", source_checkpoint_uuid: '../../etc'", "source_checkpoint_uuid", "pattern"),
    ],
)
def test_a_bad_source_is_refused_at_create_naming_the_field(
    master: MasterProcess, source: str, field: str, message: str
) -> None:
    archive = base64.b64encode(model_def.package(MODEL_DIR)).decode()
    response = master.http.post(
        "/experiments",
        json={"config": config("bad", 10, source), "model_definition": archive},
    )
    assert response.status_code == 422, response.text
    error = response.json()["error"]
    assert error["field"] == f"config.searcher.{field}"
    assert message in response.text
