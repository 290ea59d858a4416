"""``GET /experiments/{id}/pareto``: the best trials of a multi-objective search as a Pareto
front, from the stored validation metrics, on a real master over HTTP (each backend)."""

from __future__ import annotations

from typing import Any

import httpx

from pedl.client import Client
from pedl.db import Database, MetricRow
from pedl.db import checkpoints as checkpoints_repo
from pedl.db import metrics as metrics_repo
from pedl.vocabulary import MetricKind

from .helpers import CONFIG_YAML, LiveServer, create_experiment, create_trial

MULTI = CONFIG_YAML.replace(
    "  metric: val_loss\n  smaller_is_better: true\n  max_length: {batches: 100}\n",
    "  max_length: {batches: 100}\n"
    "  metrics:\n"
    "    - {name: val_acc, smaller_is_better: false}\n"
    "    - {name: params, smaller_is_better: true}\n",
).replace("name: single", "name: random\n  max_trials: 4")


def validate(database: Database, trial_id: int, batches: int, metrics: dict[str, Any]) -> None:
    with database.session(write=True) as session:
        row = MetricRow(MetricKind.VALIDATION, batches, metrics)
        metrics_repo.upsert_metrics(session, trial_id, [row])


def test_the_front_is_the_trials_no_other_dominates(
    client: httpx.Client, database: Database
) -> None:
    experiment = create_experiment(client, config=MULTI)
    ids = [create_trial(database, experiment["id"], hparams={"n": n})[0] for n in range(5)]
    # (val_acc, params): larger accuracy and fewer parameters are better
    validate(database, ids[0], 10, {"val_acc": 0.5, "params": 900.0})  # dominated by ids[1]
    validate(database, ids[0], 20, {"val_acc": 0.9, "params": 900.0})  # the latest counts
    validate(database, ids[1], 20, {"val_acc": 0.8, "params": 100.0})
    validate(database, ids[2], 20, {"val_acc": 0.7, "params": 500.0})  # dominated by ids[1]
    validate(database, ids[3], 20, {"val_acc": 0.99})  # no params: on no front
    with database.session(write=True) as session:
        for batches, acc in ((10, 0.7), (20, 0.8)):
            checkpoints_repo.register_checkpoint(
                session,
                ids[1],
                uuid=f"00000000-0000-0000-0000-0000000000{batches}",
                total_batches=batches,
                metadata={"validation_metrics": {"val_acc": acc, "params": 100.0}},
                resources={},
            )

    response = client.get(f"/experiments/{experiment['id']}/pareto")
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["objectives"] == [
        {"name": "val_acc", "smaller_is_better": False},
        {"name": "params", "smaller_is_better": True},
    ]
    assert body["front"] == [ids[0], ids[1]]
    points = {p["trial_id"]: p for p in body["points"]}
    assert [p["trial_id"] for p in body["points"]] == [ids[0], ids[1], ids[2], ids[3], ids[4]]
    assert points[ids[0]]["values"] == [0.9, 900.0]
    assert (points[ids[0]]["rank"], points[ids[2]]["rank"], points[ids[3]]["rank"]) == (0, 1, None)
    assert points[ids[3]]["values"] == [0.99, None]
    assert points[ids[4]]["values"] == [None, None]
    # the checkpoint taken at the validation of the point
    assert points[ids[1]]["checkpoint_uuid"] == "00000000-0000-0000-0000-000000000020"
    assert points[ids[1]]["hparams"] == {"n": 1}

    only = client.get(f"/experiments/{experiment['id']}/pareto", params={"front_only": True})
    assert [p["trial_id"] for p in only.json()["points"]] == [ids[0], ids[1]]


def test_one_objective_is_a_front_of_the_best(client: httpx.Client, database: Database) -> None:
    experiment = create_experiment(client)
    first, _ = create_trial(database, experiment["id"])
    second, _ = create_trial(database, experiment["id"])
    validate(database, first, 10, {"val_loss": 0.3})
    validate(database, second, 10, {"val_loss": 0.2})
    body = client.get(f"/experiments/{experiment['id']}/pareto").json()
    assert body["objectives"] == [{"name": "val_loss", "smaller_is_better": True}]
    assert body["front"] == [second]


def test_an_unknown_experiment_is_404(client: httpx.Client) -> None:
    assert client.get("/experiments/999999/pareto").status_code == 404


def test_the_sdk_returns_the_front(
    live_server: LiveServer, client: httpx.Client, database: Database
) -> None:
    experiment = create_experiment(client, config=MULTI)
    small, _ = create_trial(database, experiment["id"], hparams={"units": 4})
    large, _ = create_trial(database, experiment["id"], hparams={"units": 64})
    worse, _ = create_trial(database, experiment["id"], hparams={"units": 65})
    validate(database, small, 10, {"val_acc": 0.6, "params": 40.0})
    validate(database, large, 10, {"val_acc": 0.9, "params": 640.0})
    validate(database, worse, 10, {"val_acc": 0.8, "params": 650.0})
    with Client(live_server.url) as sdk:
        exp = sdk.get_experiment(experiment["id"])
        front = exp.pareto_front()
        points = exp.pareto_points()
    assert [(p.trial_id, p.values, p.rank) for p in front] == [
        (small, {"val_acc": 0.6, "params": 40.0}, 0),
        (large, {"val_acc": 0.9, "params": 640.0}, 0),
    ]
    assert front[1].hparams == {"units": 64}
    assert [(p.trial_id, p.rank) for p in points] == [(small, 0), (large, 0), (worse, 1)]
