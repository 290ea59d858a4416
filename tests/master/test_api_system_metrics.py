"""System metrics over real HTTP on both databases: batches written with the trial's token,
idempotent re-sends, limits with the field named, and downsampled reads."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from pedl.db import Database

from .helpers import bearer, create_experiment, create_trial

START = datetime(2026, 1, 1, tzinfo=UTC)


@pytest.fixture
def trial(client: httpx.Client, database: Database) -> tuple[int, str]:
    return create_trial(database, create_experiment(client)["id"])


def _samples(first: int, count: int) -> list[dict[str, Any]]:
    return [
        {
            "time": (START + timedelta(seconds=5 * i)).isoformat(),
            "metrics": {"cpu_percent": float(i), "process_rss_bytes": 1e9 + i},
        }
        for i in range(first, first + count)
    ]


def test_batches_are_stored_once_and_read_by_rank(
    client: httpx.Client, trial: tuple[int, str]
) -> None:
    trial_id, token = trial
    url = f"/trials/{trial_id}/system-metrics"
    first = client.post(url, json={"samples": _samples(0, 6)}, headers=bearer(token))
    assert first.status_code == 200, first.text
    assert first.json() == {"trial_id": trial_id, "received": 6, "inserted": 6}
    again = client.post(url, json={"samples": _samples(3, 6)}, headers=bearer(token))
    assert again.json()["inserted"] == 3
    rank1 = client.post(url, json={"rank": 1, "samples": _samples(0, 2)}, headers=bearer(token))
    assert rank1.json()["inserted"] == 2

    body = client.get(url).json()
    assert body["total"] == 11 and body["downsampled"] is False
    assert [(s["rank"], s["metrics"]["cpu_percent"]) for s in body["samples"]] == [
        *[(0, float(i)) for i in range(9)],
        (1, 0.0),
        (1, 1.0),
    ]
    assert datetime.fromisoformat(body["samples"][1]["time"]) == START + timedelta(seconds=5)
    only = client.get(url, params={"rank": 1}).json()
    assert only["total"] == 2 and {s["rank"] for s in only["samples"]} == {1}


def test_long_trials_are_downsampled_evenly(client: httpx.Client, trial: tuple[int, str]) -> None:
    trial_id, token = trial
    url = f"/trials/{trial_id}/system-metrics"
    for first in range(0, 2500, 1000):
        response = client.post(url, json={"samples": _samples(first, 1000)}, headers=bearer(token))
        assert response.status_code == 200
    body = client.get(url, params={"max_points": 100}).json()
    assert body["total"] == 3000 and body["downsampled"] is True
    values = [s["metrics"]["cpu_percent"] for s in body["samples"]]
    assert len(values) == 100 and values[0] == 0.0
    assert values == [30.0 * i for i in range(100)]
    default = client.get(url).json()
    assert len(default["samples"]) == 1000


BAD_BATCHES: list[tuple[dict[str, Any], str]] = [
    ({"samples": []}, "body.samples"),
    ({"samples": _samples(0, 1001)}, "body.samples"),
    ({"rank": -1, "samples": _samples(0, 1)}, "body.rank"),
    ({"rank": 65_536, "samples": _samples(0, 1)}, "body.rank"),
    (
        {"samples": [{"time": START.isoformat(), "metrics": {f"m{i}": 1.0 for i in range(65)}}]},
        "body.samples[0].metrics",
    ),
    ({"samples": [{"time": START.isoformat(), "metrics": {"x" * 65: 1.0}}]}, "body.samples[0]"),
    ({"samples": [{"time": START.isoformat(), "metrics": {"a": "NaN"}}]}, "body.samples[0]"),
    ({"samples": [{"time": START.isoformat(), "metrics": {"a": 1e301}}]}, "body.samples[0]"),
    ({"samples": [{"time": "yesterday", "metrics": {}}]}, "body.samples[0].time"),
    ({"samples": _samples(0, 1), "extra": 1}, "body.extra"),
]


def test_bad_batches_are_refused_naming_the_field(
    client: httpx.Client, trial: tuple[int, str]
) -> None:
    trial_id, token = trial
    for body, field in BAD_BATCHES:
        response = client.post(
            f"/trials/{trial_id}/system-metrics", json=body, headers=bearer(token)
        )
        assert response.status_code == 422, (field, response.text)
        fields = [issue["field"] or "" for issue in response.json()["error"]["issues"]]
        assert any(f.startswith(field) for f in fields), (field, fields)


def test_tokens_and_reads_are_checked(
    client: httpx.Client, database: Database, trial: tuple[int, str]
) -> None:
    trial_id, _ = trial
    other_id, other_token = create_trial(database, create_experiment(client)["id"])
    url = f"/trials/{trial_id}/system-metrics"
    body = {"samples": _samples(0, 1)}
    assert client.post(url, json=body).status_code == 401  # a user's token is no trial token
    assert client.post(url, json=body, headers=bearer(other_token)).status_code == 403
    assert client.get("/trials/999999/system-metrics").status_code == 404
    for params in ({"max_points": 0}, {"max_points": 10_001}, {"rank": -1}):
        response = client.get(url, params=params)
        assert response.status_code == 422, params
    assert other_id != trial_id


@given(total=st.integers(1, 400), max_points=st.integers(1, 500))
def test_downsampling_picks_evenly_spread_samples(total: int, max_points: int) -> None:
    # The rule the database applies, on plain numbers: position k (from 0) opens a bucket.
    kept = [k for k in range(total) if (k * max_points) % total < max_points]
    assert len(kept) == min(total, max_points)
    assert kept[0] == 0
    if total > max_points > 1:
        gaps = {b - a for a, b in itertools.pairwise(kept)}
        assert max(gaps) - min(gaps, default=0) <= 1
