"""A bounded load test on loopback: 200 concurrent API readers while an experiment runs.

A real master process runs an experiment of two trials of the tiny model (real trial
processes) twice: undisturbed, then with 200 concurrent readers hammering the list,
describe and metrics routes until it ends. Every reader request must be answered (no
transport error, no timeout), never with a 5xx other than 503 + Retry-After (and, at this
size, with none at all); the loaded experiment must complete with exactly the undisturbed
run's metric rows: no report lost, none doubled.
"""

from __future__ import annotations

import asyncio
import collections
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.waits import scaled

from .e2e import MasterProcess, create_experiment, metric_rows, trials, wait_for

# Alone (make test runs the serial tests after the parallel run): 200 readers on 2 cores
# beside another worker's trials made connects time out once.
pytestmark = [pytest.mark.slow, pytest.mark.serial]

READERS = 200
CONFIG = """
name: {name}
hyperparameters:
  global_batch_size: 16
  lr: {{type: categorical, vals: [0.01, 0.05]}}
searcher:
  name: grid
  metric: val_accuracy
  smaller_is_better: false
  max_length: {{batches: 20}}
scheduling_unit: 5
min_validation_period: {{batches: 5}}
min_checkpoint_period: {{batches: 10}}
reproducibility: {{experiment_seed: 5}}
"""


@pytest.fixture(scope="module")
def master(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MasterProcess]:
    process = MasterProcess(tmp_path_factory.mktemp("load-master")).start()
    try:
        yield process
    finally:
        process.stop()


def results(master: MasterProcess, experiment_id: int) -> dict[float, list[Any]]:
    """Each trial's metric rows by its learning rate."""
    out = {}
    for trial in trials(master.http, experiment_id):
        assert trial["state"] == "COMPLETED", trial
        out[trial["hparams"]["lr"]] = metric_rows(master.http, trial["id"])
    return out


class Tally:
    def __init__(self) -> None:
        self.statuses: collections.Counter[int] = collections.Counter()
        self.bad: list[str] = []  # 5xx without Retry-After, transport errors, timeouts
        self.slowest = 0.0


async def reader(
    http: httpx.AsyncClient, experiment_id: int, number: int, done: asyncio.Event, tally: Tally
) -> None:
    trial_ids: list[int] = []
    turn = number
    while not done.is_set():
        if turn % 3 == 0 or not trial_ids:
            path = f"/experiments/{experiment_id}/trials"
        elif turn % 3 == 1:
            path = f"/experiments/{experiment_id}"
        else:
            path = f"/trials/{trial_ids[turn % len(trial_ids)]}/metrics"
        turn += 1
        started = time.monotonic()
        try:
            response = await http.get(path)
        except httpx.HTTPError as err:
            tally.bad.append(f"{path}: {type(err).__name__}: {err}")
            continue
        tally.slowest = max(tally.slowest, time.monotonic() - started)
        tally.statuses[response.status_code] += 1
        if response.status_code == 503 and response.headers.get("Retry-After"):
            await asyncio.sleep(float(response.headers["Retry-After"]))
        elif response.status_code != 200:
            tally.bad.append(f"{path}: {response.status_code} {response.text[:200]}")
        elif path.endswith("/trials"):
            trial_ids = [item["id"] for item in response.json()["items"]] or trial_ids


async def hammer(master: MasterProcess, experiment_id: int, tally: Tally) -> dict[str, Any]:
    """Run the readers until the experiment ends; return its final state."""
    done = asyncio.Event()
    limits = httpx.Limits(max_connections=READERS, max_keepalive_connections=READERS)
    signed_in = {"Authorization": master.http.headers["Authorization"]}
    async with httpx.AsyncClient(
        base_url=master.url + "/api/v1", timeout=scaled(60), limits=limits, headers=signed_in
    ) as http:
        tasks = [
            asyncio.create_task(reader(http, experiment_id, n, done, tally)) for n in range(READERS)
        ]
        deadline = time.monotonic() + scaled(150)
        state: dict[str, Any] = {}
        while time.monotonic() < deadline:
            await asyncio.sleep(0.5)
            answer = await http.get(f"/experiments/{experiment_id}")
            state = answer.json() if answer.status_code == 200 else state
            if state.get("state") in {"COMPLETED", "CANCELED", "ERROR"}:
                break
        done.set()
        await asyncio.gather(*tasks)
    return state


def test_200_readers_while_an_experiment_runs(master: MasterProcess, tmp_path: Path) -> None:
    quiet = create_experiment(master.http, CONFIG.format(name="undisturbed"))
    wait_for(master.http, quiet, {"COMPLETED"}, timeout=150, master=master)
    reference = results(master, quiet)
    assert sorted(reference) == [0.01, 0.05]

    loaded = create_experiment(master.http, CONFIG.format(name="under-load"))
    tally = Tally()
    final = asyncio.run(hammer(master, loaded, tally))
    assert final.get("state") == "COMPLETED", (final, master.log()[-5000:])
    assert tally.bad == [], tally.bad[:10]
    assert sum(tally.statuses.values()) > READERS  # every reader got answers
    assert set(tally.statuses) <= {200, 503}
    assert tally.statuses[503] == 0, tally.statuses  # shedding was not even needed
    assert results(master, loaded) == reference
    assert "Traceback" not in master.log(), master.log()[-5000:]
