"""What the web UI reads beyond the SDK's routes (ui/API.md), over real HTTP, on SQLite and
PostgreSQL: experiment descriptions, labels, filters and sorting; trial sorting; learning
curves (downsampled, best trials kept, incremental); the trials summary; metric names; the
cluster; log cursors."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest

from pedl.db import Database, MetricRow
from pedl.db import experiments as experiments_repo
from pedl.db import metrics as metrics_repo
from pedl.db import trials as trials_repo
from pedl.vocabulary import MetricKind, TrialState

from .helpers import CONFIG_YAML, bearer, create_experiment, create_trial

LABELLED = CONFIG_YAML.replace(
    "name: mnist\n", "name: mnist\ndescription: first try\nlabels: [cnn, baseline]\n"
)


def validations(
    database: Database, trial_id: int, values: list[Any], *, name: str = "val_loss", step: int = 10
) -> None:
    """Store validation rows at batches step, 2*step, ... with ``name: value`` (and the
    searcher metric, ``val_loss``, as every validation has it)."""
    rows = [
        MetricRow(
            MetricKind.VALIDATION, (i + 1) * step, {"val_loss": 1.0, name: value, "val_acc": 0.5}
        )
        for i, value in enumerate(values)
    ]
    with database.session(write=True) as session:
        metrics_repo.upsert_metrics(session, trial_id, rows)


# --- experiments: description, labels, filters, sorting --------------------------------------


def test_description_and_labels_come_from_the_config_and_patch_changes_them(
    client: httpx.Client,
) -> None:
    created = create_experiment(client, config=LABELLED)
    assert created["description"] == "first try" and created["labels"] == ["cnn", "baseline"]
    plain = create_experiment(client)
    assert plain["description"] is None and plain["labels"] == []
    url = f"/experiments/{created['id']}"
    patched = client.patch(url, json={"labels": ["b", "a", "b"]})
    assert patched.status_code == 200, patched.text
    assert patched.json()["labels"] == ["b", "a"]
    assert patched.json()["description"] == "first try"  # left out: unchanged
    patched = client.patch(url, json={"description": "second"}).json()
    assert patched["description"] == "second" and patched["labels"] == ["b", "a"]
    assert client.get(url).json()["description"] == "second"
    assert client.patch(url, json={"description": None}).json()["description"] is None


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"description": "x" * 10_001}, "description"),
        ({"labels": ["x"] * 101}, "labels"),
        ({"labels": ["x" * 256]}, "labels"),
        ({"labels": [""]}, "labels"),
        ({"labels": ["a\x00b"]}, "labels"),
        ({"name": "x" * 513}, "name"),
        ({"name": "a\x00b"}, "name"),
    ],
)
def test_patch_limits(client: httpx.Client, body: dict[str, Any], field: str) -> None:
    experiment_id = create_experiment(client)["id"]
    response = client.patch(f"/experiments/{experiment_id}", json=body)
    assert response.status_code == 422, response.text
    assert field in response.json()["error"]["field"]
    ok = {"description": "x" * 10_000, "labels": [f"l{i}" for i in range(100)]}
    assert client.patch(f"/experiments/{experiment_id}", json=ok).status_code == 200
    assert client.patch("/experiments/999999", json={"labels": []}).status_code == 404


def test_list_filters_by_name_and_labels(client: httpx.Client) -> None:
    a = create_experiment(client, config=LABELLED)["id"]
    b = create_experiment(client, config=CONFIG_YAML.replace("name: mnist", "name: Big_CIFAR"))[
        "id"
    ]
    c = create_experiment(client, config=LABELLED.replace("[cnn, baseline]", "[cnn]"))["id"]

    def ids(**params: Any) -> list[int]:
        response = client.get("/experiments", params=params)
        assert response.status_code == 200, response.text
        return [e["id"] for e in response.json()["items"]]

    assert ids(name="cifar") == [b]  # any case
    assert ids(name="MNI") == [c, a]
    assert ids(name="_") == [b]  # not a wildcard
    assert ids(name="%") == []
    assert ids(label="cnn") == [c, a]
    assert ids(label=["cnn", "baseline"]) == [a]  # every label
    assert ids(label="nope") == []
    page = client.get("/experiments", params={"label": "cnn", "limit": 1}).json()
    assert page["total"] == 2 and len(page["items"]) == 1


def test_list_sorts_by_any_column(client: httpx.Client, database: Database) -> None:
    names = ["b", "c", "a"]
    ids = [
        create_experiment(client, config=CONFIG_YAML.replace("name: mnist", f"name: {n}"))["id"]
        for n in names
    ]
    best = {ids[0]: 0.5, ids[1]: 0.1}  # ids[2] has no validation yet
    for experiment_id, value in best.items():
        trial_id, _ = create_trial(database, experiment_id)
        validations(database, trial_id, [value])
    with database.session(write=True) as session:
        experiments_repo.set_experiment_progress(session, ids[1], 0.7)

    def order(sort: str) -> list[int]:
        response = client.get("/experiments", params={"sort": sort})
        assert response.status_code == 200, response.text
        return [e["id"] for e in response.json()["items"]]

    assert order("-id") == ids[::-1] == order("-created_at")
    assert order("id") == ids
    assert order("name") == [ids[2], ids[0], ids[1]]
    assert order("-name") == [ids[1], ids[0], ids[2]]
    assert order("best_validation") == [ids[1], ids[0], ids[2]]  # none last
    assert order("-best_validation") == [ids[0], ids[1], ids[2]]  # none last
    assert order("-progress")[0] == ids[1]
    assert order("state") == ids  # all ACTIVE: by id
    assert order("ended_at") == ids  # none ended: by id
    assert order("owner") == ids  # all the same owner: by id
    assert order("-description") == ids[::-1]  # all without one: by id, descending
    for bad in ("seed", "--id", "", "id;drop"):
        response = client.get("/experiments", params={"sort": bad})
        assert response.status_code == 422 and response.json()["error"]["field"] == "sort"


def test_list_filters_by_ranges_of_id_progress_best_start_and_duration(
    client: httpx.Client, database: Database
) -> None:
    ids = [create_experiment(client)["id"] for _ in range(3)]
    trial_id, _ = create_trial(database, ids[0])
    validations(database, trial_id, [0.25])  # ids[1] and ids[2]: no best yet
    now = datetime.now(UTC)
    with database.session(write=True) as session:
        experiments_repo.set_experiment_progress(session, ids[1], 0.5)
        for experiment_id, age_h, lasted_h in zip(ids, (50, 30, 2), (1, None, 0.5), strict=True):
            row = experiments_repo.get_experiment(session, experiment_id)
            row.created_at = now - timedelta(hours=age_h)
            row.ended_at = None if lasted_h is None else row.created_at + timedelta(hours=lasted_h)

    def matching(*ranges: str) -> list[int]:
        response = client.get("/experiments", params={"range": list(ranges), "sort": "id"})
        assert response.status_code == 200, response.text
        return [e["id"] for e in response.json()["items"]]

    assert matching(f"id:{ids[1]}..") == ids[1:]
    assert matching("progress:0.4..0.6") == [ids[1]]
    assert matching("best_validation:..0.3") == [ids[0]]  # no best: outside every range
    assert matching("duration:3000..4000") == [ids[0]]  # 1 h
    assert matching("duration:7200..") == [ids[1]]  # not ended: 30 h so far
    yesterday = (now - timedelta(hours=26)).date().isoformat()
    since = (now - timedelta(hours=40)).isoformat()
    assert matching(f"created_at:{since}..") == ids[1:]
    naive_utc = (now - timedelta(hours=40)).replace(tzinfo=None).isoformat()
    assert matching(f"created_at:..{naive_utc}") == [ids[0]]
    assert ids[1] in matching(f"created_at:{(now - timedelta(hours=30)).date()}..{yesterday}")
    assert matching(f"created_at:{since}..", "duration:..3600") == [ids[2]]  # all of them
    for bad in (
        "progress",
        "progress:1",
        "seed:1..2",
        "progress:..",
        "progress:0.9..0.1",
        "duration:nan..",
        "created_at:yesterday..",
        "created_at:2026-11-27..2026-11-26",
        "x" * 301,
    ):
        response = client.get("/experiments", params={"range": bad})
        assert response.status_code == 422, bad
        assert "range" in str(response.json()["error"]["field"]), response.text
    too_many = [f"id:{i}.." for i in range(len(experiments_repo.EXPERIMENT_RANGE_COLUMNS) + 1)]
    assert client.get("/experiments", params={"range": too_many}).status_code == 422


def test_trials_sort(client: httpx.Client, database: Database) -> None:
    experiment_id = create_experiment(client)["id"]
    trial_ids = [create_trial(database, experiment_id)[0] for _ in range(3)]
    validations(database, trial_ids[0], [0.3])
    validations(database, trial_ids[2], [0.2])
    with database.session(write=True) as session:
        trials_repo.record_trial_restart(session, trial_ids[1])

    def order(sort: str) -> list[int]:
        response = client.get(f"/experiments/{experiment_id}/trials", params={"sort": sort})
        assert response.status_code == 200, response.text
        return [t["id"] for t in response.json()["items"]]

    assert order("id") == trial_ids and order("-id") == trial_ids[::-1]
    assert order("best_validation") == [trial_ids[2], trial_ids[0], trial_ids[1]]
    assert order("-best_validation") == [trial_ids[0], trial_ids[2], trial_ids[1]]
    assert order("-restarts") == [trial_ids[1], trial_ids[2], trial_ids[0]]
    assert order("state") == trial_ids
    response = client.get(f"/experiments/{experiment_id}/trials", params={"sort": "seed"})
    assert response.status_code == 422 and response.json()["error"]["field"] == "sort"


# --- learning curves -----------------------------------------------------------------------


def series(client: httpx.Client, experiment_id: int, **params: Any) -> dict[str, Any]:
    response = client.get(f"/experiments/{experiment_id}/series", params=params)
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def test_series_one_line_per_trial_with_numeric_points(
    client: httpx.Client, database: Database
) -> None:
    experiment_id = create_experiment(client)["id"]
    first, _ = create_trial(database, experiment_id)
    second, _ = create_trial(database, experiment_id)
    create_trial(database, experiment_id)  # nothing reported: no line
    validations(database, first, [0.9, "NaN", 0.5, None, 0.4])
    validations(database, second, [0.8, 0.7], step=5)
    body = series(client, experiment_id, metric="val_loss")
    assert body["kind"] == "validation" and body["metric"] == "val_loss" and body["x"] == "batches"
    lines = {line["trial_id"]: line for line in body["trials"]}
    assert lines[first]["points"] == [[10, 0.9], [30, 0.5], [50, 0.4]]
    assert lines[second]["points"] == [[5, 0.8], [10, 0.7]]
    # Both trials' best val_loss is 1.0: the best is the one of them with the lower id.
    assert lines[first]["best"] and not lines[second]["best"]
    assert [line["trial_id"] for line in body["trials"]] == [first, second]
    other = series(client, experiment_id, metric="val_acc")
    assert other["trials"][0]["points"][0] == [10, 0.5]
    assert series(client, experiment_id, metric="nope")["trials"] == []
    assert series(client, experiment_id, metric="val_loss", kind="training")["trials"] == []


def test_series_downsampled_keeps_first_and_last(client: httpx.Client, database: Database) -> None:
    experiment_id = create_experiment(client)["id"]
    trial_id, _ = create_trial(database, experiment_id)
    values = [((i * 7919) % 101) / 100 for i in range(500)]
    validations(database, trial_id, values)
    points = series(client, experiment_id, metric="val_loss", max_points=50)["trials"][0]["points"]
    assert len(points) == 50
    assert points[0] == [10, values[0]] and points[-1] == [5000, values[-1]]
    every = {(10 * (i + 1), value) for i, value in enumerate(values)}
    assert {tuple(p) for p in points} <= every
    assert [p[0] for p in points] == sorted(p[0] for p in points)
    whole = series(client, experiment_id, metric="val_loss", max_points=2000)
    assert len(whole["trials"][0]["points"]) == 500


def test_series_keeps_the_best_trials_and_spreads_the_rest(
    client: httpx.Client, database: Database
) -> None:
    experiment_id = create_experiment(client)["id"]  # smaller is better (val_loss)
    trial_ids = [create_trial(database, experiment_id)[0] for _ in range(30)]
    # The best five are scattered over the ids; every trial has one point.
    score = {t: 1.0 + i for i, t in enumerate(trial_ids)}
    for rank, index in enumerate([29, 3, 17, 11, 24]):
        score[trial_ids[index]] = rank / 10
    for trial_id in trial_ids:
        validations(database, trial_id, [score[trial_id]])
    body = series(client, experiment_id, metric="val_loss", max_trials=10)
    drawn = [line["trial_id"] for line in body["trials"]]
    assert len(drawn) == 10 and drawn == sorted(drawn)
    assert {trial_ids[i] for i in (29, 3, 17, 11, 24)} <= set(drawn)  # the best 5 kept
    best = {line["trial_id"] for line in body["trials"] if line["best"]}
    assert best == {trial_ids[29]}  # only the best one is marked
    assert series(client, experiment_id, metric="val_loss", max_trials=10) == body  # stable
    few = series(client, experiment_id, metric="val_loss", max_trials=3)
    assert [line["trial_id"] for line in few["trials"]] == sorted(trial_ids[i] for i in (29, 3, 17))
    assert [line["best"] for line in few["trials"]] == [
        t == trial_ids[29] for t in sorted(trial_ids[i] for i in (29, 3, 17))
    ]
    # Bigger is better: the best are the others.
    with database.session(write=True) as session:
        experiments_repo.get_experiment(session, experiment_id).smaller_is_better = False
    top = series(client, experiment_id, metric="val_loss", max_trials=5)
    assert {line["trial_id"] for line in top["trials"]} == {
        trial_ids[i] for i in (28, 27, 26, 25, 23)
    }


def test_series_points_in_batch_order_whatever_the_storing_order(
    client: httpx.Client, database: Database
) -> None:
    experiment_id = create_experiment(client)["id"]
    trial_id, _ = create_trial(database, experiment_id)
    order = [7, 2, 9, 1, 5, 3, 8, 4, 6]
    with database.session(write=True) as session:
        for batches in order:  # one row at a time: ids follow this order, not the batches
            metrics_repo.upsert_metrics(
                session,
                trial_id,
                [MetricRow(MetricKind.VALIDATION, batches, {"val_loss": batches / 10})],
            )
    points = series(client, experiment_id, metric="val_loss")["trials"][0]["points"]
    assert points == [[b, b / 10] for b in sorted(order)]
    cut = series(client, experiment_id, metric="val_loss", max_points=3)["trials"][0]["points"]
    assert len(cut) == 3 and cut[0] == [1, 0.1] and cut[-1] == [9, 0.9]


def test_series_cursor_gives_only_new_points(client: httpx.Client, database: Database) -> None:
    experiment_id = create_experiment(client)["id"]
    trial_id, _ = create_trial(database, experiment_id)
    validations(database, trial_id, [0.9, 0.8])
    first = series(client, experiment_id, metric="val_loss")
    cursor = first["cursor"]
    assert cursor > 0
    again = series(client, experiment_id, metric="val_loss", after=cursor)
    assert again["trials"] == [] and again["cursor"] == cursor
    with database.session(write=True) as session:
        metrics_repo.upsert_metrics(
            session,
            trial_id,
            [MetricRow(MetricKind.VALIDATION, 30, {"val_loss": 0.7})],
        )
    newer = series(client, experiment_id, metric="val_loss", after=cursor)
    assert newer["trials"] == [{"trial_id": trial_id, "best": True, "points": [[30, 0.7]]}]
    assert newer["cursor"] > cursor


def test_series_in_epochs(client: httpx.Client, database: Database) -> None:
    config = CONFIG_YAML + "records_per_epoch: 1000\n"
    config = config.replace("  lr: 0.1\n", "  lr: 0.1\n  global_batch_size: 50\n")
    experiment_id = create_experiment(client, config=config)["id"]
    trial_id, _ = create_trial(database, experiment_id, hparams={"global_batch_size": 50})
    validations(database, trial_id, [0.9, 0.8])
    body = series(client, experiment_id, metric="val_loss", x="epochs")
    assert body["x"] == "epochs" and body["trials"][0]["points"] == [[0.5, 0.9], [1.0, 0.8]]
    plain = create_experiment(client)["id"]
    other, _ = create_trial(database, plain)
    validations(database, other, [0.9])
    response = client.get(
        f"/experiments/{plain}/series", params={"metric": "val_loss", "x": "epochs"}
    )
    assert response.status_code == 422 and response.json()["error"]["field"] == "x"


def test_series_in_epochs_use_each_rows_stored_epochs(
    client: httpx.Client, database: Database
) -> None:
    """x=epochs places a point at its row's stored total_epochs (a script's fit epochs, which
    no config field gives: two fit stages of different batch sizes), without
    records_per_epoch or global_batch_size; rows that stored none fall back to the config's
    conversion, and without it the answer is 422 as before."""
    experiment_id = create_experiment(client)["id"]  # no records_per_epoch
    trial_id, _ = create_trial(database, experiment_id)
    stages = [(8, 1.0, 0.9), (16, 2.0, 0.8), (20, 3.0, 0.7), (24, 4.0, 0.6)]
    rows = [
        MetricRow(MetricKind.VALIDATION, b, {"val_loss": v}, total_epochs=e) for b, e, v in stages
    ]
    with database.session(write=True) as session:
        metrics_repo.upsert_metrics(session, trial_id, rows)
    body = series(client, experiment_id, metric="val_loss", x="epochs")
    assert body["x"] == "epochs"
    assert body["trials"][0]["points"] == [[1.0, 0.9], [2.0, 0.8], [3.0, 0.7], [4.0, 0.6]]
    cursor = body["cursor"]
    newer = MetricRow(MetricKind.VALIDATION, 28, {"val_loss": 0.5}, total_epochs=5.0)
    with database.session(write=True) as session:
        metrics_repo.upsert_metrics(session, trial_id, [newer])
    update = series(client, experiment_id, metric="val_loss", x="epochs", after=cursor)
    assert update["trials"][0]["points"] == [[5.0, 0.5]]
    quoted = [MetricRow(MetricKind.VALIDATION, 8, {'say "hi"': 0.25}, total_epochs=0.5)]
    with database.session(write=True) as session:
        metrics_repo.upsert_metrics(session, trial_id, quoted)
    body = series(client, experiment_id, metric='say "hi"', x="epochs")
    assert body["trials"][0]["points"] == [[0.5, 0.25]]

    # Rows without stored epochs: converted with the config's records_per_epoch and the
    # trial's global_batch_size where there are (as before), else 422 naming x.
    config = CONFIG_YAML + "records_per_epoch: 1000\n"
    config = config.replace("  lr: 0.1\n", "  lr: 0.1\n  global_batch_size: 50\n")
    mixed = create_experiment(client, config=config)["id"]
    other, _ = create_trial(database, mixed, hparams={"global_batch_size": 50})
    rows = [
        MetricRow(MetricKind.VALIDATION, 10, {"val_loss": 0.9}),
        MetricRow(MetricKind.VALIDATION, 20, {"val_loss": 0.8}, total_epochs=7.0),
    ]
    with database.session(write=True) as session:
        metrics_repo.upsert_metrics(session, other, rows)
    body = series(client, mixed, metric="val_loss", x="epochs")
    assert body["trials"][0]["points"] == [[0.5, 0.9], [7.0, 0.8]]
    plain = create_experiment(client)["id"]
    unknown, _ = create_trial(database, plain)
    validations(database, unknown, [0.9])
    response = client.get(
        f"/experiments/{plain}/series", params={"metric": "val_loss", "x": "epochs"}
    )
    assert response.status_code == 422 and response.json()["error"]["field"] == "x"


def test_series_metric_names_that_need_quoting(client: httpx.Client, database: Database) -> None:
    experiment_id = create_experiment(client)["id"]
    trial_id, _ = create_trial(database, experiment_id)
    for name in ("val.loss", 'say "hi"', "it's", "a[0]", "$.x"):
        validations(database, trial_id, [0.25], name=name)
        lines = series(client, experiment_id, metric=name)["trials"]
        assert lines, name
        points = lines[0]["points"]
        assert points == [[10, 0.25]], name


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({}, "metric"),
        ({"metric": ""}, "metric"),
        ({"metric": "m", "max_points": 1}, "max_points"),
        ({"metric": "m", "max_points": 2001}, "max_points"),
        ({"metric": "m", "max_trials": 0}, "max_trials"),
        ({"metric": "m", "max_trials": 1001}, "max_trials"),
        ({"metric": "m", "kind": "test"}, "kind"),
        ({"metric": "m", "x": "seconds"}, "x"),
        ({"metric": "m", "after": -1}, "after"),
    ],
)
def test_series_limits(client: httpx.Client, params: dict[str, Any], field: str) -> None:
    experiment_id = create_experiment(client)["id"]
    response = client.get(f"/experiments/{experiment_id}/series", params=params)
    assert response.status_code == 422, response.text
    assert field in response.json()["error"]["field"]


def test_unknown_experiment_is_404(client: httpx.Client) -> None:
    for path in ("series?metric=m", "trials/summary", "metric-names"):
        response = client.get(f"/experiments/424242/{path}")
        assert response.status_code == 404, path


# --- trials summary, metric names ------------------------------------------------------------


def test_trials_summary_columns(client: httpx.Client, database: Database) -> None:
    experiment_id = create_experiment(client)["id"]
    a, _ = create_trial(database, experiment_id, hparams={"lr": 0.1, "layers": {"units": 8}})
    b, _ = create_trial(
        database, experiment_id, hparams={"lr": 0.01, "opt": "adam"}, state=TrialState.QUEUED
    )
    validations(database, a, [0.5, 0.3])
    response = client.get(f"/experiments/{experiment_id}/trials/summary")
    assert response.status_code == 200, response.text
    assert response.json() == {
        "trial_ids": [a, b],
        "states": ["ACTIVE", "QUEUED"],
        "best_validation": [0.3, None],
        "hparams": {"lr": [0.1, 0.01], "layers.units": [8, None], "opt": [None, "adam"]},
    }
    # A new trial (with a new hyperparameter) shows on the next read; the kept columns grow.
    c, _ = create_trial(database, experiment_id, hparams={"lr": 0.5, "momentum": 0.9})
    again = client.get(f"/experiments/{experiment_id}/trials/summary").json()
    assert again["trial_ids"] == [a, b, c] and again["states"] == ["ACTIVE", "QUEUED", "ACTIVE"]
    assert again["hparams"] == {
        "lr": [0.1, 0.01, 0.5],
        "layers.units": [8, None, None],
        "opt": [None, "adam", None],
        "momentum": [None, None, 0.9],
    }
    empty = create_experiment(client)["id"]
    assert client.get(f"/experiments/{empty}/trials/summary").json() == {
        "trial_ids": [],
        "states": [],
        "best_validation": [],
        "hparams": {},
    }


def test_metric_names(client: httpx.Client, database: Database) -> None:
    experiment_id = create_experiment(client)["id"]
    a, _ = create_trial(database, experiment_id)
    b, _ = create_trial(database, experiment_id)
    validations(database, a, [0.5, 0.4])
    validations(database, b, [0.5], name="val_f1")
    with database.session(write=True) as session:
        metrics_repo.upsert_metrics(
            session, b, [MetricRow(MetricKind.TRAINING, 5, {"loss": 1.0, "accuracy": 0.1})]
        )
    response = client.get(f"/experiments/{experiment_id}/metric-names")
    assert response.status_code == 200, response.text
    assert response.json() == {
        "training": ["accuracy", "loss"],
        "validation": ["val_acc", "val_f1", "val_loss"],
    }
    empty = create_experiment(client)["id"]
    assert client.get(f"/experiments/{empty}/metric-names").json() == {
        "training": [],
        "validation": [],
    }


# --- cluster, logs ---------------------------------------------------------------------------


def test_cluster_lists_running_and_queued_trials(client: httpx.Client, database: Database) -> None:
    assert client.get("/cluster").json() == {
        "slots_total": 0,  # this master runs no experiments
        "slots_used": 0,
        "running": [],
        "queued": [],
        "halted": None,
        "worker_exits": [],
        "idle_workers": [],
    }
    experiment_id = create_experiment(
        client, config=CONFIG_YAML + "resources:\n  slots_per_trial: 2\n"
    )["id"]
    running, _ = create_trial(database, experiment_id, state=TrialState.RUNNING)
    queued, _ = create_trial(database, experiment_id, state=TrialState.QUEUED)
    create_trial(database, experiment_id)  # ACTIVE: neither
    body = client.get("/cluster").json()
    assert body["slots_used"] == 2
    assert body["running"] == [
        {"trial_id": running, "experiment_id": experiment_id, "slots": 2, "workers": []}
    ]
    assert body["queued"] == [{"trial_id": queued, "experiment_id": experiment_id, "reason": None}]


def test_logs_after_cursor(client: httpx.Client, database: Database) -> None:
    experiment_id = create_experiment(client)["id"]
    trial_id, token = create_trial(database, experiment_id)
    lines = [{"seq": i, "message": f"line {i}"} for i in range(5)]
    sent = client.post(f"/trials/{trial_id}/logs", json={"lines": lines}, headers=bearer(token))
    assert sent.status_code == 200, sent.text
    newer = client.get(f"/trials/{trial_id}/logs", params={"after": 2}).json()
    assert [line["seq"] for line in newer] == [3, 4]
    assert [line["seq"] for line in client.get(f"/trials/{trial_id}/logs").json()] == list(range(5))
