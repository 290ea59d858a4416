"""The search-level charts' endpoints over real HTTP, on SQLite and PostgreSQL: hyperparameter
importance (Optuna's PED-ANOVA), the optimization history, the timeline of trials over slots
(from the orchestrator's lines in the trials' logs), and the learning curves' choices of
trials (best, worst, all, picked)."""

from __future__ import annotations

import random
import time
from datetime import datetime, timedelta
from typing import Any

import httpx
import pytest

from pedl.db import Database, Experiment, LogLine
from pedl.db import logs as logs_repo
from pedl.db import trials as trials_repo
from pedl.db.search_history import ATTEMPT_EXITED, ATTEMPT_STARTED, MASTER_STREAM
from pedl.master.api import visualization
from pedl.master.api._importance import Importance, compute_importance
from pedl.vocabulary import ExperimentState, TrialState
from tests.waits import scaled

from .helpers import CONFIG_YAML, create_experiment, create_trial
from .test_api_visualization import validations

SEARCH = CONFIG_YAML.replace(
    "hyperparameters:\n  lr: 0.1\n",
    "hyperparameters:\n  lr: {type: log, minval: -4, maxval: -1}\n"
    "  units: {type: int, minval: 1, maxval: 100}\n"
    "  opt: {type: categorical, vals: [adam, sgd]}\n",
)


def _set(database: Database, trial_id: int, **values: Any) -> None:
    with database.session(write=True) as session:
        trial = trials_repo.get_trial(session, trial_id)
        for name, value in values.items():
            setattr(trial, name, value)


def importance(client: httpx.Client, experiment_id: int) -> dict[str, Any]:
    """The importance once computed (the master computes it in the background: the first
    answers say ``ready: false``)."""
    deadline = time.monotonic() + scaled(120)  # Optuna's first import, on a loaded machine
    while True:
        response = client.get(f"/experiments/{experiment_id}/importance")
        assert response.status_code == 200, response.text
        body: dict[str, Any] = response.json()
        if (body["ready"] and body["current"]) or time.monotonic() > deadline:
            return body
        time.sleep(0.2)


def test_importance_ranks_the_deciding_hyperparameter_first(
    client: httpx.Client, database: Database
) -> None:
    experiment_id = create_experiment(client, config=SEARCH)["id"]
    rng = random.Random(3)
    for _ in range(60):
        hparams = {
            "lr": 10 ** rng.uniform(-4, -1),
            "units": rng.randint(1, 100),
            "opt": rng.choice(["adam", "sgd"]),
            "layers": rng.randint(1, 4),
        }
        trial_id, _ = create_trial(database, experiment_id, hparams=hparams)
        _set(database, trial_id, best_validation=hparams["units"] / 100)  # units alone decides
    body = importance(client, experiment_id)
    assert body["metric"] == "val_loss" and body["trials"] == 60 and body["current"]
    names = [item["name"] for item in body["importances"]]
    assert names[0] == "units"
    assert set(names) == {"lr", "units", "opt", "layers"}
    assert abs(sum(item["importance"] for item in body["importances"]) - 1.0) < 1e-6
    assert body["importances"][0]["importance"] > 0.5


def test_importance_of_more_trials_than_kept_uses_a_sample() -> None:
    rng = random.Random(4)
    units = [rng.randint(1, 100) for _ in range(300)]
    columns = {"units": units, "lr": [rng.uniform(0.001, 0.1) for _ in units]}
    values: list[float | None] = [u / 100 for u in units]  # units alone decides

    def ranked() -> Importance:
        return compute_importance(columns, values, smaller_is_better=True, max_trials=100)

    found = ranked()
    assert found.trials == 100 and found.importances[0][0] == "units"
    assert ranked() == found  # the same sample of the same trials


def test_importance_without_values_is_all_zero(client: httpx.Client, database: Database) -> None:
    experiment_id = create_experiment(client, config=SEARCH)["id"]
    create_trial(database, experiment_id, hparams={"lr": 0.1, "units": 3, "opt": "sgd"})
    body = importance(client, experiment_id)
    assert body["trials"] == 0 and body["importances"] == []
    assert client.get("/experiments/999999/importance").status_code == 404


def test_history_orders_trials_by_end_and_keeps_the_best_so_far(
    client: httpx.Client, database: Database
) -> None:
    experiment_id = create_experiment(client)["id"]  # smaller is better
    created = client.get(f"/experiments/{experiment_id}").json()["created_at"]
    start = datetime.fromisoformat(created)
    ends = [30, 10, 20, None]  # seconds after the start; None: still running
    values = [0.2, 0.5, 0.1, 0.05]
    ids = []
    for end, value in zip(ends, values, strict=True):
        trial_id, _ = create_trial(database, experiment_id)
        ids.append(trial_id)
        _set(
            database,
            trial_id,
            best_validation=value,
            state=TrialState.RUNNING if end is None else TrialState.COMPLETED,
            ended_at=None if end is None else start + timedelta(seconds=end),
        )
    create_trial(database, experiment_id)  # no value: left out
    body = client.get(f"/experiments/{experiment_id}/history").json()
    assert body["trial_ids"] == [ids[1], ids[2], ids[0], ids[3]]
    assert body["times"][:3] == [10.0, 20.0, 30.0] and body["times"][3] >= 0  # now
    assert body["ended"] == [True, True, True, False]
    assert body["values"] == [0.5, 0.1, 0.2, 0.05]
    assert body["best_so_far"] == [0.5, 0.1, 0.1, 0.05]


def _attempt(
    database: Database, trial_id: int, seq: int, start: datetime, end: datetime | None
) -> None:
    lines = [LogLine(seq, f"{ATTEMPT_STARTED} from scratch", stream=MASTER_STREAM, timestamp=start)]
    if end is not None:
        lines.append(
            LogLine(seq + 1, f"{ATTEMPT_EXITED} (exit code 0)", stream=MASTER_STREAM, timestamp=end)
        )
    with database.session(write=True) as session:
        logs_repo.append_logs(session, trial_id, lines)


def test_timeline_places_overlapping_attempts_on_different_slots(
    client: httpx.Client, database: Database
) -> None:
    experiment_id = create_experiment(client)["id"]
    start = datetime.fromisoformat(client.get(f"/experiments/{experiment_id}").json()["created_at"])
    at = [start + timedelta(seconds=s) for s in range(0, 100, 10)]
    a, _ = create_trial(database, experiment_id)
    b, _ = create_trial(database, experiment_id)
    c, _ = create_trial(database, experiment_id)
    _attempt(database, a, 0, at[0], at[3])  # 0-30
    _attempt(database, a, 5, at[5], at[6])  # its restart, 50-60
    _attempt(database, b, 0, at[1], at[2])  # 10-20, beside a
    _attempt(database, c, 0, at[3], None)  # 30-: a's slot is free again; still running
    with database.session(write=True) as session:  # a line that is not an attempt's
        logs_repo.append_logs(session, c, [LogLine(9, "[master] queued: no free slot")])
    body = client.get(f"/experiments/{experiment_id}/timeline").json()
    assert body["trial_ids"] == [a, a, b, c]
    assert body["starts"] == [0.0, 50.0, 10.0, 30.0]
    assert body["ends"] == [30.0, 60.0, 20.0, None]
    assert body["slot"] == [0, 1, 1, 0]  # a's restart: c holds slot 0, b left slot 1
    assert body["slots"] == 2 and body["slots_per_trial"] == 1
    # c ended without an exit line: its attempt ends with the trial.
    _set(database, c, state=TrialState.COMPLETED, ended_at=at[9])
    assert client.get(f"/experiments/{experiment_id}/timeline").json()["ends"][3] == 90.0


def test_series_choices_of_trials(
    client: httpx.Client, database: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(visualization, "SERIES_CHUNK", 3)  # 8 trials' lines read in 3 queries
    experiment_id = create_experiment(client)["id"]  # smaller is better
    trial_ids = [create_trial(database, experiment_id)[0] for _ in range(8)]
    for rank, trial_id in enumerate(trial_ids):
        validations(database, trial_id, [1.0 + rank])
        _set(database, trial_id, best_validation=1.0 + rank)

    def drawn(**params: Any) -> tuple[list[int], list[int], dict[str, Any]]:
        response = client.get(
            f"/experiments/{experiment_id}/series", params={"metric": "val_loss", **params}
        )
        assert response.status_code == 200, response.text
        body = response.json()
        lines = body["trials"]
        return [t["trial_id"] for t in lines], [t["trial_id"] for t in lines if t["best"]], body

    ids, best, body = drawn(max_trials=3)
    assert len(ids) == 3 and best == [trial_ids[0]]  # only the best is marked
    assert body["total_trials"] == 8 and body["select"] == "default"
    assert drawn(select="best", max_trials=2)[0] == trial_ids[:2]
    ids, best, _ = drawn(select="worst", max_trials=3)
    assert ids == trial_ids[-3:] and best == []
    ids, _, body = drawn(select="all", max_trials=1)
    assert ids == trial_ids
    assert [t["points"] for t in body["trials"]] == [[[10, 1.0 + rank]] for rank in range(8)]
    validations(database, trial_ids[0], [1.0, 0.5])  # a new point, at 20 batches
    ids, _, _ = drawn(select="all", after=body["cursor"])  # the cursor of all 3 queries
    assert ids == [trial_ids[0]]
    picked = [trial_ids[5], trial_ids[1], 999_999]
    assert drawn(select="ids", trial_id=picked)[0] == sorted(trial_ids[i] for i in (1, 5))


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"select": "ids"}, "trial_id"),
        ({"select": "best", "trial_id": 1}, "trial_id"),
        ({"select": "ids", "trial_id": list(range(1, 102))}, "trial_id"),
        ({"select": "nope"}, "select"),
    ],
)
def test_series_choice_limits(client: httpx.Client, params: dict[str, Any], field: str) -> None:
    experiment_id = create_experiment(client)["id"]
    response = client.get(
        f"/experiments/{experiment_id}/series", params={"metric": "val_loss", **params}
    )
    assert response.status_code == 422, response.text
    assert field in response.json()["error"]["field"]


def test_history_and_timeline_of_unknown_experiment(client: httpx.Client) -> None:
    for chart in ("history", "timeline", "importance"):
        assert client.get(f"/experiments/999999/{chart}").status_code == 404


def _end(database: Database, experiment_id: int, at: datetime) -> None:
    with database.session(write=True) as session:
        experiment = session.get(Experiment, experiment_id)
        assert experiment is not None
        experiment.state = ExperimentState.COMPLETED
        experiment.ended_at = at


def test_an_ended_experiments_charts_are_kept_until_it_ends_again(
    client: httpx.Client, database: Database
) -> None:
    experiment_id = create_experiment(client, config=SEARCH)["id"]
    start = datetime.fromisoformat(client.get(f"/experiments/{experiment_id}").json()["created_at"])
    ids = []
    for i in range(4):
        hparams = {"lr": 0.001 * (i + 1), "units": i + 1, "opt": "adam" if i % 2 else "sgd"}
        trial_id, _ = create_trial(database, experiment_id, hparams=hparams)
        validations(database, trial_id, [0.9 - 0.1 * i])
        _set(
            database,
            trial_id,
            best_validation=0.9 - 0.1 * i,
            state=TrialState.COMPLETED,
            ended_at=start + timedelta(seconds=i + 1),
        )
        _attempt(
            database, trial_id, 0, start + timedelta(seconds=i), start + timedelta(seconds=i + 1)
        )
        ids.append(trial_id)
    _end(database, experiment_id, start + timedelta(seconds=10))
    charts = ["series?metric=val_loss", "trials/summary", "history", "timeline"]

    def answers() -> dict[str, Any]:
        found = {}
        for chart in charts:
            response = client.get(f"/experiments/{experiment_id}/{chart}")
            assert response.status_code == 200, response.text
            found[chart] = response.json()
        return found

    first = answers()
    first_importance = importance(client, experiment_id)
    assert first_importance["ready"] and first_importance["trials"] == 4
    assert first["history"]["values"] == pytest.approx([0.9, 0.8, 0.7, 0.6])
    # Rows changed under an ended experiment (nothing in PEDL does so) do not show: its
    # answers were kept.
    validations(database, ids[0], [0.9, 0.05])
    _set(database, ids[0], best_validation=0.05)
    assert answers() == first
    assert client.get(f"/experiments/{experiment_id}/importance").json() == first_importance
    # Continued and ended again (a later end): read afresh.
    _end(database, experiment_id, start + timedelta(seconds=20))
    again = answers()
    assert again["trials/summary"]["best_validation"][0] == 0.05
    assert again["history"]["best_so_far"][-1] == 0.05
    curve = next(t for t in again["series?metric=val_loss"]["trials"] if t["trial_id"] == ids[0])
    assert len(curve["points"]) == 2
    assert {**again["timeline"], "now": 0} == {**first["timeline"], "now": 0}
