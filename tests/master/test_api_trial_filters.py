"""The trials list sorted and filtered by any column, hyperparameters and metrics included,
and the experiment list by labels, duration, description and owner, over real HTTP on SQLite
and PostgreSQL; each bad request a 422 naming its parameter."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import httpx
import pytest

from pedl.db import Database, MetricRow
from pedl.db import metrics as metrics_repo
from pedl.db import trials as trials_repo
from pedl.db._models import Experiment, Trial
from pedl.db._types import utcnow
from pedl.vocabulary import MetricKind, TrialState

from .helpers import CONFIG_YAML, create_experiment, create_trial

SEARCH = CONFIG_YAML.replace(
    "  lr: 0.1\n  layers: {type: int, minval: 1, maxval: 4}\n",
    "  lr: {type: log, minval: -4, maxval: -1, base: 10}\n"
    "  units: {type: int, minval: 8, maxval: 64}\n"
    "  optimizer: {type: categorical, vals: [adam, sgd, 3]}\n"
    "  head:\n    dropout: {type: double, minval: 0, maxval: 0.5}\n"
    "  warm: {type: categorical, vals: [true, false]}\n",
)

HPARAMS = [
    {"lr": 0.01, "units": 32, "optimizer": "sgd", "head": {"dropout": 0.2}, "warm": True},
    {"lr": 0.001, "units": 64, "optimizer": "adam", "head": {"dropout": 0.1}, "warm": False},
    {"lr": 0.1, "units": 8, "optimizer": 3, "head": {"dropout": 0.4}, "warm": True},
    {"lr": 0.05, "units": 16, "optimizer": "adam", "head": {"dropout": 0.3}, "warm": False},
]


def validate(database: Database, trial_id: int, rows: list[dict[str, Any]]) -> None:
    """Validation rows at 10, 20, ... batches."""
    with database.session(write=True) as session:
        metrics_repo.upsert_metrics(
            session,
            trial_id,
            [MetricRow(MetricKind.VALIDATION, 10 * (i + 1), m) for i, m in enumerate(rows)],
        )


@pytest.fixture
def search(client: httpx.Client, database: Database) -> tuple[int, list[int]]:
    """An experiment of four trials (:data:`HPARAMS`) with validations: the latest accuracy
    of each is 0.6, 0.9, none (it never validated), 0.7."""
    experiment_id = create_experiment(client, config=SEARCH)["id"]
    ids = [
        create_trial(database, experiment_id, hparams=h, seed=i)[0] for i, h in enumerate(HPARAMS)
    ]
    validate(database, ids[0], [{"val_loss": 0.5, "acc": 0.8}, {"val_loss": 0.4, "acc": 0.6}])
    # the latest row lacks acc: its latest value is the one before
    validate(database, ids[1], [{"val_loss": 0.3, "acc": 0.9}, {"val_loss": 0.2}])
    validate(database, ids[3], [{"val_loss": 0.9, "acc": "NaN"}, {"val_loss": 0.8, "acc": 0.7}])
    now = utcnow()
    with database.session(write=True) as session:
        trials_repo.set_trial_state(session, ids[3], TrialState.QUEUED)
        # created a minute apart, the first earliest: two trials created within the same
        # millisecond would tie on duration (SQLite's date arithmetic is in milliseconds)
        for i, trial_id in enumerate(ids):
            row = session.get(Trial, trial_id)
            assert row is not None
            row.created_at = now - timedelta(minutes=len(ids) - i)
    return experiment_id, ids


def listed(client: httpx.Client, experiment_id: int, **params: Any) -> list[int]:
    response = client.get(f"/experiments/{experiment_id}/trials", params=params)
    assert response.status_code == 200, response.text
    return [t["id"] for t in response.json()["items"]]


def test_sort_by_hyperparameters_and_metrics(
    client: httpx.Client, search: tuple[int, list[int]]
) -> None:
    experiment_id, ids = search
    t = ids

    def order(sort: str) -> list[int]:
        return listed(client, experiment_id, sort=sort)

    assert order("hparams.lr") == [t[1], t[0], t[3], t[2]]
    assert order("-hparams.lr") == [t[2], t[3], t[0], t[1]]
    assert order("hparams.head.dropout") == [t[1], t[0], t[3], t[2]]
    # numbers first, then strings by their text
    assert order("hparams.optimizer") == [t[2], t[1], t[3], t[0]]
    assert order("-hparams.optimizer") == [t[2], t[0], t[3], t[1]]
    assert order("hparams.warm") == [t[1], t[3], t[0], t[2]]  # false < true, then by id
    # the latest value: trial 1's latest row lacks acc, so 0.9 from the row before; trial 2
    # never reported it and trial 3's latest is 0.7 (its NaN earlier is no number)
    assert order("metrics.acc") == [t[0], t[3], t[1], t[2]]
    assert order("-metrics.acc") == [t[1], t[3], t[0], t[2]]
    assert order("metrics.val_loss") == [t[1], t[0], t[3], t[2]]
    assert order("metrics.nothing") == t  # no trial reported it: by id
    assert order("state") == [t[0], t[1], t[2], t[3]]  # ACTIVE before QUEUED
    assert order("-duration") == t  # the first created has lasted longest
    for plain in ("outcome", "created_at", "ended_at", "duration", "-restarts"):
        assert sorted(order(plain)) == t


def test_latest_validation_comes_with_each_trial(
    client: httpx.Client, search: tuple[int, list[int]]
) -> None:
    experiment_id, ids = search
    items = client.get(f"/experiments/{experiment_id}/trials").json()["items"]
    latest = {item["id"]: item["latest_validation"] for item in items}
    assert latest == {
        ids[0]: {"val_loss": 0.4, "acc": 0.6},
        ids[1]: {"val_loss": 0.2},
        ids[2]: None,
        ids[3]: {"val_loss": 0.8, "acc": 0.7},
    }


def test_filter_by_ranges_and_values(client: httpx.Client, search: tuple[int, list[int]]) -> None:
    experiment_id, t = search

    def ids(**params: Any) -> list[int]:
        return listed(client, experiment_id, **params)

    assert ids(range="hparams.lr:0.005..0.06") == [t[0], t[3]]
    assert ids(range="hparams.lr:..0.01") == [t[0], t[1]]
    assert ids(range="hparams.units:32..") == [t[0], t[1]]
    assert ids(range="hparams.head.dropout:0.25..0.35") == [t[3]]
    assert ids(range="metrics.acc:0.65..") == [t[1], t[3]]
    assert ids(range="metrics.acc:-1e9..1e9") == [t[0], t[1], t[3]]  # trial 2 has none
    assert ids(range="best_validation:..0.4") == [t[0], t[1]]  # best val_loss 0.4, 0.2, 0.8
    assert ids(range=["hparams.lr:0.001..0.05", "metrics.acc:0.8.."]) == [t[1]]  # all
    assert ids(range="hparams.optimizer:0..10") == [t[2]]  # only its numbers
    assert ids(value="hparams.optimizer:adam") == [t[1], t[3]]
    assert ids(value=["hparams.optimizer:adam", "hparams.optimizer:3"]) == [t[1], t[2], t[3]]
    assert ids(value=["hparams.optimizer:adam", "hparams.warm:true"]) == []
    assert ids(value="hparams.warm:true") == [t[0], t[2]]
    assert ids(value="hparams.units:64") == [t[1]]  # a number equal to the value
    assert ids(value="hparams.optimizer:adam", state="QUEUED") == [t[3]]
    page = client.get(
        f"/experiments/{experiment_id}/trials",
        params={"value": "hparams.optimizer:adam", "sort": "-metrics.acc", "limit": 1},
    ).json()
    assert page["total"] == 2 and [i["id"] for i in page["items"]] == [t[1]]


@pytest.mark.parametrize(
    ("params", "field", "words"),
    [
        ({"sort": "seed"}, "sort", "no column 'seed'"),
        ({"sort": "hparams.nope"}, "sort", "no hyperparameter 'nope'"),
        ({"sort": "hparams.head"}, "sort", "no hyperparameter 'head'"),
        ({"sort": "metrics."}, "sort", "names no metric"),
        ({"sort": "metrics." + "m" * 257}, "sort", "names no metric"),
        ({"sort": "x" * 301}, "sort", "300"),
        ({"range": "hparams.lr"}, "range", "COLUMN:LOW..HIGH"),
        ({"range": "hparams.lr:0.1"}, "range", "COLUMN:LOW..HIGH"),
        ({"range": "hparams.lr:.."}, "range", "neither"),
        ({"range": "hparams.lr:a..1"}, "range", "'a' is not a finite number"),
        ({"range": "hparams.lr:nan..1"}, "range", "not a finite number"),
        ({"range": "hparams.lr:1..inf"}, "range", "not a finite number"),
        ({"range": "hparams.lr:2..1"}, "range", "above"),
        ({"range": "state:1..2"}, "range", "no column 'state'"),
        ({"range": "hparams.nope:1..2"}, "range", "no hyperparameter"),
        ({"range": [f"hparams.lr:{i}.." for i in range(21)]}, "range", "20"),
        ({"value": "hparams.optimizer"}, "value", "hparams.NAME:VALUE"),
        ({"value": "state:ACTIVE"}, "value", "hparams.NAME:VALUE"),
        ({"value": "hparams.nope:1"}, "value", "no hyperparameter"),
        ({"value": "hparams.optimizer:" + "a" * 300}, "value", "300"),
        ({"value": ["hparams.optimizer:a"] * 21}, "value", "20"),
    ],
)
def test_bad_trial_queries_are_422_naming_the_parameter(
    client: httpx.Client,
    search: tuple[int, list[int]],
    params: dict[str, Any],
    field: str,
    words: str,
) -> None:
    experiment_id, _ = search
    response = client.get(f"/experiments/{experiment_id}/trials", params=params)
    assert response.status_code == 422, response.text
    error = response.json()["error"]
    assert field in error["field"], error
    assert words in response.text, error


def test_unknown_experiment_is_404(client: httpx.Client) -> None:
    response = client.get("/experiments/999999/trials", params={"sort": "metrics.acc"})
    assert response.status_code == 404, response.text


# --- the experiment list ------------------------------------------------------------------


def test_experiments_sort_by_labels_and_duration(client: httpx.Client, database: Database) -> None:
    labels = [["zeta", "beta"], [], ["alpha"], ["gamma"]]
    ids = [
        create_experiment(
            client, config=CONFIG_YAML.replace("name: mnist\n", f"name: mnist\nlabels: {ls}\n")
        )["id"]
        for ls in labels
    ]
    now = utcnow()
    # Lasted: 0 ended after 1 h; 1 runs since 3 h; 2 ended after 10 min; 3 runs since 2 h.
    times = {ids[0]: (5, 4), ids[1]: (3, None), ids[2]: (8, 8 - 1 / 6), ids[3]: (2, None)}
    with database.session(write=True) as session:
        for experiment_id, (start, end) in times.items():
            row = session.get(Experiment, experiment_id)
            assert row is not None
            row.created_at = now - timedelta(hours=start)
            row.ended_at = None if end is None else now - timedelta(hours=end)

    def order(sort: str) -> list[int]:
        response = client.get("/experiments", params={"sort": sort})
        assert response.status_code == 200, response.text
        return [e["id"] for e in response.json()["items"] if e["id"] in ids]

    assert order("labels") == [ids[2], ids[0], ids[3], ids[1]]  # first label; none last
    assert order("-labels") == [ids[3], ids[0], ids[2], ids[1]]
    assert order("duration") == [ids[2], ids[0], ids[3], ids[1]]
    assert order("-duration") == [ids[1], ids[3], ids[0], ids[2]]


def test_experiments_filter_by_description_and_owner(
    client: httpx.Client, database: Database
) -> None:
    described = CONFIG_YAML.replace("name: mnist\n", "name: mnist\ndescription: Wide_ResNet\n")
    a = create_experiment(client, config=described)["id"]
    b = create_experiment(client)["id"]
    with database.session(write=True) as session:
        row = session.get(Experiment, b)
        assert row is not None
        row.owner = "someone-else"

    def ids(**params: Any) -> list[int]:
        response = client.get("/experiments", params=params)
        assert response.status_code == 200, response.text
        return [e["id"] for e in response.json()["items"] if e["id"] in (a, b)]

    assert ids(description="resnet") == [a]
    assert ids(description="_res") == [a]  # literal, any case
    assert ids(description="%") == []
    assert ids(owner="ELSE") == [b]
    assert ids(owner="someone", description="wide") == []
    for params, field in (
        ({"owner": "x" * 129}, "owner"),
        ({"description": "x" * 513}, "description"),
    ):
        response = client.get("/experiments", params=params)
        assert response.status_code == 422 and field in response.json()["error"]["field"]


def test_trials_in_another_experiment_stay_out(client: httpx.Client, database: Database) -> None:
    first = create_experiment(client, config=SEARCH)["id"]
    other = create_experiment(client, config=SEARCH)["id"]
    mine = create_trial(database, first, hparams=HPARAMS[0])[0]
    create_trial(database, other, hparams=HPARAMS[0])
    assert listed(client, first, value="hparams.optimizer:sgd") == [mine]
    with database.session() as session:
        assert session.get(Trial, mine) is not None


def test_a_trial_waiting_for_the_searcher_says_so(client: httpx.Client, database: Database) -> None:
    """ACTIVE after training (its process exited after a rung): ``waiting_for_searcher`` in
    the list and the trial's own answer; not before it trained, nor while a process runs."""
    experiment_id = create_experiment(client, config=SEARCH)["id"]
    waiting, fresh, running = (
        create_trial(database, experiment_id, hparams=HPARAMS[i], seed=i)[0] for i in range(3)
    )
    with database.session(write=True) as session:
        for trial_id in (waiting, running):
            row = session.get(Trial, trial_id)
            assert row is not None
            row.total_batches = 40
        trials_repo.set_trial_state(session, running, TrialState.RUNNING)
    items = client.get(f"/experiments/{experiment_id}/trials").json()["items"]
    assert {i["id"]: i["waiting_for_searcher"] for i in items} == {
        waiting: True,
        fresh: False,
        running: False,
    }
    assert client.get(f"/trials/{waiting}").json()["waiting_for_searcher"] is True
    assert client.get(f"/trials/{running}").json()["waiting_for_searcher"] is False
