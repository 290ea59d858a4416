"""GET /experiments/{id} brings its trials' counts by state, read with it (so a page shows
the experiment's state and its trials' counts as one answer), on both databases."""

from __future__ import annotations

import httpx

from pedl.db import Database
from pedl.db import trials as trials_repo
from pedl.vocabulary import TrialState

from .helpers import create_experiment, create_trial


def test_the_experiment_carries_its_trial_counts(client: httpx.Client, database: Database) -> None:
    experiment_id = create_experiment(client)["id"]
    assert client.get(f"/experiments/{experiment_id}").json()["trial_counts"] == {}
    ids = [create_trial(database, experiment_id, seed=s)[0] for s in range(4)]
    with database.session(write=True) as session:
        trials_repo.set_trial_state(session, ids[0], TrialState.QUEUED)
        trials_repo.set_trial_state(session, ids[1], TrialState.PAUSED)
        trials_repo.set_trial_state(session, ids[2], TrialState.PAUSED)
    other = create_experiment(client)["id"]
    create_trial(database, other)
    body = client.get(f"/experiments/{experiment_id}").json()
    assert body["trial_counts"] == {"ACTIVE": 1, "QUEUED": 1, "PAUSED": 2}
    listed = client.get("/experiments").json()["items"]
    assert all(e.get("trial_counts") is None for e in listed)  # one read per page, not per row
