"""A trial's token lives as long as its attempt, and a trial that has ended takes no writes;
reports past the length the searcher asked for, and metric values beyond what every reader
can use, are refused; floats come back as floats.

The orchestrated tests run a real master (real orchestrator, real database of each backend,
real HTTP on loopback) whose resource manager runs each trial "process" as a thread that
speaks the trial's HTTP protocol (start, operation, metrics, checkpoints, completion, exit)
with the token the orchestrator issued to that attempt: a real trial process would import
TensorFlow, seconds per attempt.
"""

from __future__ import annotations

import base64
import contextlib
import json
import re
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from pedl.db import ConflictError, Database, MetricIngestor, MetricRow
from pedl.db import trials as trials_repo
from pedl.master import MasterSettings, create_app
from pedl.master.api._app import make_database
from pedl.master.orchestrator import Orchestrator
from pedl.master.rm import ExitHandler, LogSink, ResourceManager, TrialLaunch
from pedl.vocabulary import MetricKind, TrialState
from tests.waits import scaled

from .e2e import free_port
from .helpers import LiveServer, bearer, create_experiment, create_trial, make_archive, sign_in

CONFIG = """
name: tokens
entrypoint: model_def:MyTrial
hyperparameters: {lr: 0.1}
searcher:
  name: single
  metric: val_accuracy
  smaller_is_better: false
  max_length: {batches: 10}
max_restarts: 3
"""
LENGTH = 10
BEST = 0.9694
TIMEOUT_S = scaled(30.0)

Script = Callable[["Attempt"], int]
"""A trial attempt's "process": returns its exit status."""


@dataclass
class Attempt:
    """One start of a trial: what the orchestrator launched, an HTTP client carrying the
    attempt's token, its number (1 for the trial's first), and the kill request."""

    launch: TrialLaunch
    number: int
    api: httpx.Client
    killed: threading.Event

    @property
    def path(self) -> str:
        return f"/trials/{self.launch.trial_id}"

    def operation(self) -> dict[str, Any]:
        response = self.api.get(f"{self.path}/searcher/operation")
        assert response.status_code == 200, response.text
        body: dict[str, Any] = response.json()
        return body


class ThreadTrials(ResourceManager):
    """A resource manager whose trial processes are threads running ``script`` (the exit
    status it returns is the process's; a killed one exits with -9)."""

    def __init__(self, script: Script, *, on_exit: ExitHandler, log_sink: LogSink) -> None:
        self._script = script
        self._on_exit = on_exit
        self._lock = threading.Lock()
        self._running: dict[int, threading.Event] = {}
        self._threads: list[threading.Thread] = []
        self.launches: list[TrialLaunch] = []
        self.failures: list[str] = []

    @property
    def total_slots(self) -> int:
        return 2

    @property
    def uses_gpus(self) -> bool:
        return False

    def start(self, launch: TrialLaunch) -> None:
        killed = threading.Event()
        with self._lock:
            self.launches.append(launch)
            number = sum(1 for known in self.launches if known.trial_id == launch.trial_id)
            self._running[launch.trial_id] = killed
        thread = threading.Thread(target=self._run, args=(launch, number, killed), daemon=True)
        self._threads.append(thread)
        thread.start()

    def _run(self, launch: TrialLaunch, number: int, killed: threading.Event) -> None:
        returncode = 1
        try:
            with httpx.Client(
                base_url=launch.master_url + "/api/v1",
                headers=bearer(launch.token),
                timeout=scaled(30),
            ) as api:
                returncode = self._script(Attempt(launch, number, api, killed))
        except BaseException as err:  # the test's main thread reports it
            self.failures.append(f"trial {launch.trial_id} attempt {number}: {err!r}")
        if killed.is_set():
            returncode = -9
        with self._lock:
            self._running.pop(launch.trial_id, None)
        self._on_exit(launch.trial_id, returncode)

    def kill(self, trial_id: int) -> None:
        with self._lock:
            killed = self._running.get(trial_id)
        if killed is not None:
            killed.set()

    def running(self) -> set[int]:
        with self._lock:
            return set(self._running)

    def shutdown(self) -> None:
        with self._lock:
            for killed in self._running.values():
                killed.set()
        for thread in self._threads:
            thread.join(timeout=scaled(10))

    def tokens(self, trial_id: int) -> list[str]:
        """The tokens of the trial's attempts so far, oldest first."""
        with self._lock:
            return [launch.token for launch in self.launches if launch.trial_id == trial_id]


@dataclass
class Master:
    """A served master with an orchestrator on :class:`ThreadTrials`."""

    url: str
    http: httpx.Client
    trials: ThreadTrials
    database: Database

    def as_trial(self, token: str) -> httpx.Client:
        return httpx.Client(
            base_url=self.url + "/api/v1", headers=bearer(token), timeout=scaled(30)
        )

    def create_experiment(self) -> int:
        """Create an experiment of :data:`CONFIG`; its id."""
        archive = base64.b64encode(make_archive()).decode()
        response = self.http.post(
            "/experiments", json={"config": CONFIG, "model_definition": archive}
        )
        assert response.status_code == 201, response.text
        experiment_id: int = response.json()["id"]
        return experiment_id

    def run_experiment(self, states: set[str]) -> tuple[int, int]:
        """Create an experiment of :data:`CONFIG`, wait until it is in one of ``states``;
        its id and its (only) trial's."""
        experiment_id = self.create_experiment()
        deadline = time.monotonic() + TIMEOUT_S
        while True:
            assert not self.trials.failures, self.trials.failures
            state = self.http.get(f"/experiments/{experiment_id}").json()["state"]
            if state in states:
                break
            assert time.monotonic() < deadline, f"experiment {experiment_id} is {state}"
            time.sleep(0.05)
        (trial,) = self.http.get(f"/experiments/{experiment_id}/trials").json()["items"]
        return experiment_id, trial["id"]

    def wait_trial(self, trial_id: int, states: set[str]) -> dict[str, Any]:
        deadline = time.monotonic() + TIMEOUT_S
        while True:
            assert not self.trials.failures, self.trials.failures
            trial: dict[str, Any] = self.http.get(f"/trials/{trial_id}").json()
            if trial["state"] in states:
                return trial
            assert time.monotonic() < deadline, f"trial {trial_id} is {trial['state']}"
            time.sleep(0.05)


@contextlib.contextmanager
def orchestrated_master(db_url: str, home: Path, script: Script) -> Iterator[Master]:
    port = free_port()
    settings = MasterSettings(home=home, db_url=db_url)
    database = make_database(settings)
    made: list[ThreadTrials] = []

    def resource_manager(*, on_exit: ExitHandler, log_sink: LogSink) -> ThreadTrials:
        made.append(ThreadTrials(script, on_exit=on_exit, log_sink=log_sink))
        return made[0]

    orchestrator = Orchestrator(
        database, settings, master_url=f"http://127.0.0.1:{port}", resource_manager=resource_manager
    )
    app = create_app(settings, database=database, orchestrator=orchestrator)
    try:
        with (
            LiveServer(app, port=port) as server,
            httpx.Client(
                base_url=server.url + "/api/v1", timeout=scaled(30), headers=sign_in(database)
            ) as http,
        ):
            yield Master(server.url, http, made[0], database)
    finally:
        database.dispose()


def _rows(kind: str, batches: int, **metrics: Any) -> dict[str, Any]:
    return {"rows": [{"kind": kind, "total_batches": batches, "metrics": metrics}]}


def _checkpoint(batches: int) -> dict[str, Any]:
    return {"uuid": str(uuid.uuid4()), "total_batches": batches, "resources": {"w": 1}}


def _train_and_complete(attempt: Attempt) -> int:
    """A well-behaved attempt: train to the length, validate, checkpoint, complete, exit."""
    api, path = attempt.api, attempt.path
    assert api.get(f"{path}/start").status_code == 200
    operation = attempt.operation()
    assert operation == {"status": "train", "length": LENGTH}, operation
    for body in (
        _rows("training", 5, loss=0.5),
        _rows("training", LENGTH, loss=0.25),
        _rows("validation", LENGTH, val_accuracy=BEST),
    ):
        response = api.post(f"{path}/metrics", json=body)
        assert response.status_code == 200, response.text
    response = api.post(f"{path}/checkpoints", json=_checkpoint(LENGTH))
    assert response.status_code == 201, response.text
    done = api.post(f"{path}/searcher/completed", json={"length": LENGTH, "metric": BEST})
    assert done.status_code == 204, done.text
    assert attempt.operation()["status"] == "closed"
    exited = api.post(f"{path}/exit", json={"outcome": "COMPLETED"})
    assert exited.status_code == 204, exited.text
    return 0


def _refused(response: httpx.Response) -> bool:
    """A write refused because the trial ended: its token is revoked (401) or the trial's
    state is (409)."""
    return response.status_code in (401, 409)


def test_a_finished_trial_accepts_no_write_with_its_token(
    fresh_db_url: str, tmp_path: Path
) -> None:
    with orchestrated_master(fresh_db_url, tmp_path, _train_and_complete) as master:
        experiment_id, trial_id = master.run_experiment({"COMPLETED"})
        trial = master.http.get(f"/trials/{trial_id}").json()
        assert trial["state"] == "COMPLETED" and trial["best_validation"] == BEST
        (token,) = master.trials.tokens(trial_id)
        path = f"/trials/{trial_id}"
        with master.as_trial(token) as api:
            answers = {
                "overwrite validation": api.post(
                    f"{path}/metrics", json=_rows("validation", LENGTH, val_accuracy=0.0001)
                ),
                "row past the length": api.post(
                    f"{path}/metrics", json=_rows("validation", 20, val_accuracy=1e300)
                ),
                "checkpoint": api.post(f"{path}/checkpoints", json=_checkpoint(LENGTH)),
                "searcher completion": api.post(
                    f"{path}/searcher/completed", json={"length": LENGTH, "metric": 1e300}
                ),
                "start": api.get(f"{path}/start"),
                "preempt": api.get(f"{path}/preempt"),
                "operation": api.get(f"{path}/searcher/operation"),
                "exit": api.post(f"{path}/exit", json={"outcome": "COMPLETED"}),
                "logs": api.post(f"{path}/logs", json={"lines": [{"seq": 9, "message": "x"}]}),
            }
        wrong = {what: r.status_code for what, r in answers.items() if not _refused(r)}
        assert not wrong, wrong
        rows = master.http.get(f"{path}/metrics", params={"kind": "validation"}).json()
        assert [(r["total_batches"], r["metrics"]) for r in rows] == [
            (LENGTH, {"val_accuracy": BEST})
        ]
        assert master.http.get(f"/trials/{trial_id}").json()["best_validation"] == BEST
        assert master.http.get(f"/experiments/{experiment_id}").json()["best_validation"] == BEST
        checkpoints = master.http.get(f"{path}/checkpoints").json()
        assert checkpoints["total"] == 1


def test_reports_past_the_asked_length_are_refused(fresh_db_url: str, tmp_path: Path) -> None:
    answers: dict[str, httpx.Response] = {}

    def overreaching(attempt: Attempt) -> int:
        api, path = attempt.api, attempt.path
        assert attempt.operation() == {"status": "train", "length": LENGTH}
        answers["training row"] = api.post(
            f"{path}/metrics", json=_rows("training", LENGTH + 1, loss=0.1)
        )
        answers["validation row"] = api.post(
            f"{path}/metrics",
            json={
                "rows": [
                    {"kind": "validation", "total_batches": LENGTH, "metrics": {"a": 1.0}},
                    {"kind": "validation", "total_batches": 500, "metrics": {"a": 2.0}},
                ]
            },
        )
        answers["checkpoint"] = api.post(f"{path}/checkpoints", json=_checkpoint(LENGTH + 1))
        answers["completion"] = api.post(
            f"{path}/searcher/completed", json={"length": LENGTH + 1, "metric": 0.5}
        )
        return _train_and_complete(attempt)

    with orchestrated_master(fresh_db_url, tmp_path, overreaching) as master:
        _experiment_id, trial_id = master.run_experiment({"COMPLETED"})
        fields = {
            "training row": "rows[0].total_batches",
            "validation row": "rows[1].total_batches",
            "checkpoint": "total_batches",
            "completion": "length",
        }
        for what, name in fields.items():
            response = answers[what]
            assert response.status_code == 409, (what, response.text)
            assert response.json()["error"]["field"] == name, (what, response.text)
        rows = master.http.get(f"/trials/{trial_id}/metrics").json()
        assert max(r["total_batches"] for r in rows) == LENGTH
        assert {r["metrics"].get("a") for r in rows} == {None}  # the refused report: no row
        checkpoints = master.http.get(f"/trials/{trial_id}/checkpoints").json()["items"]
        assert [c["total_batches"] for c in checkpoints] == [LENGTH]


def test_each_attempt_has_its_own_token_revoked_when_it_exits(
    fresh_db_url: str, tmp_path: Path
) -> None:
    """Attempt 1 crashes (exit 1: errored, restarted), attempt 2 exits without a report
    (preempted, started again), attempt 3 completes: each attempt finds the tokens of the
    earlier ones revoked and its own working."""
    earlier: dict[int, dict[str, int]] = {}
    tokens: list[str] = []

    def attempt_script(attempt: Attempt) -> int:
        api, path = attempt.api, attempt.path
        tokens.append(attempt.launch.token)
        seen = {}
        for old in tokens[:-1]:
            with httpx.Client(
                base_url=attempt.launch.master_url + "/api/v1",
                headers=bearer(old),
                timeout=scaled(30),
            ) as stale:
                seen[f"metrics {old[:6]}"] = stale.post(
                    f"{path}/metrics", json=_rows("training", 1, loss=9.0)
                ).status_code
                seen[f"start {old[:6]}"] = stale.get(f"{path}/start").status_code
                seen[f"preempt {old[:6]}"] = stale.get(f"{path}/preempt").status_code
        earlier[attempt.number] = seen
        if attempt.number == 1:
            assert api.get(f"{path}/start").status_code == 200
            assert attempt.operation()["status"] == "train"
            response = api.post(f"{path}/metrics", json=_rows("training", 2, loss=1.0))
            assert response.status_code == 200, response.text
            return 1  # a crash: no exit report
        if attempt.number == 2:
            assert api.get(f"{path}/start").status_code == 200
            return 0  # ended without a report: preempted
        return _train_and_complete(attempt)

    with orchestrated_master(fresh_db_url, tmp_path, attempt_script) as master:
        _experiment_id, trial_id = master.run_experiment({"COMPLETED"})
        assert len(set(tokens)) == 3
        assert earlier[1] == {}
        assert set(earlier[2].values()) == {401}, earlier[2]
        assert set(earlier[3].values()) == {401} and len(earlier[3]) == 6, earlier[3]
        trial = master.http.get(f"/trials/{trial_id}").json()
        assert trial["state"] == "COMPLETED" and trial["restarts"] == 1
        rows = master.http.get(f"/trials/{trial_id}/metrics", params={"kind": "training"}).json()
        assert [r["metrics"]["loss"] for r in rows if r["total_batches"] == 1] == []
        with master.as_trial(tokens[-1]) as api:
            assert api.get(f"/trials/{trial_id}/start").status_code == 401


def test_a_killed_attempts_token_is_revoked(fresh_db_url: str, tmp_path: Path) -> None:
    started = threading.Event()

    def waits_to_be_killed(attempt: Attempt) -> int:
        assert attempt.operation()["status"] == "train"
        started.set()
        attempt.killed.wait(TIMEOUT_S)
        return 0

    with orchestrated_master(fresh_db_url, tmp_path, waits_to_be_killed) as master:
        experiment_id = master.create_experiment()
        assert started.wait(TIMEOUT_S), master.trials.failures
        (trial,) = master.http.get(f"/experiments/{experiment_id}/trials").json()["items"]
        trial_id = trial["id"]
        (token,) = master.trials.tokens(trial_id)
        with master.as_trial(token) as api:
            alive = api.post(f"/trials/{trial_id}/metrics", json=_rows("training", 1, loss=1.0))
            assert alive.status_code == 200, alive.text
            assert master.http.post(f"/trials/{trial_id}/kill").status_code == 202
            master.wait_trial(trial_id, {"CANCELED"})
            dead = api.post(f"/trials/{trial_id}/metrics", json=_rows("training", 2, loss=1.0))
            assert _refused(dead), dead.text
            assert _refused(api.get(f"/trials/{trial_id}/preempt"))


def test_an_ended_trial_takes_no_metrics_even_without_a_token(
    client: httpx.Client, database: Database
) -> None:
    """Ending a trial revokes its token, and the metric writer refuses an ended trial's rows
    whoever asks (409, ``state``)."""
    trial_id, token = create_trial(database, create_experiment(client)["id"])
    with database.session(write=True) as session:
        for state in (TrialState.QUEUED, TrialState.RUNNING, TrialState.COMPLETED):
            trials_repo.set_trial_state(session, trial_id, state)
    refused = client.post(
        f"/trials/{trial_id}/metrics", json=_rows("training", 1, loss=1.0), headers=bearer(token)
    )
    assert refused.status_code == 401, refused.text
    ingestor = MetricIngestor(database)
    ingestor.start()
    try:
        with pytest.raises(ConflictError) as raised:
            row = MetricRow(kind=MetricKind.TRAINING, total_batches=1, metrics={})
            ingestor.ingest(trial_id, [row])
        assert raised.value.field == "state"
    finally:
        ingestor.stop()
    assert client.get(f"/trials/{trial_id}/metrics").json() == []


def test_metric_values_come_back_as_floats_and_beyond_the_bound_are_refused(
    client: httpx.Client, database: Database
) -> None:
    experiment = create_experiment(client)
    trial_id, token = create_trial(database, experiment["id"])
    path = f"/trials/{trial_id}"
    headers = bearer(token)
    body = _rows("validation", 10, val_loss=1e300, big=1.5e20, small=-2e16, tiny=1e-300)
    assert client.post(f"{path}/metrics", json=body, headers=headers).status_code == 200
    alone = _rows("validation", 5, tiny=1e-300)
    assert client.post(f"{path}/metrics", json=alone, headers=headers).status_code == 200
    text = client.get(f"{path}/metrics").text
    assert re.search(r"[0-9]{17}", text) is None, text[:400]
    tiny, row = json.loads(text)
    assert tiny["metrics"] == {"tiny": 1e-300}
    assert row["metrics"] == {"val_loss": 1e300, "big": 1.5e20, "small": -2e16, "tiny": 1e-300}
    assert all(isinstance(value, float) for value in row["metrics"].values())
    assert "1e+300" in text
    created = client.post(f"{path}/checkpoints", json=_checkpoint(10), headers=headers)
    assert created.status_code == 201, created.text
    assert re.search(r"[0-9]{17}", created.text) is None and "1e+300" in created.text
    listed = client.get(f"{path}/checkpoints").text
    assert re.search(r"[0-9]{17}", listed) is None and "1e+300" in listed
    for value in (1e301, -1e301, 1.7976931348623157e308):
        refused = client.post(
            f"{path}/metrics",
            json={
                "rows": [
                    {"kind": "training", "total_batches": 1, "metrics": {"loss": 0.5}},
                    {"kind": "training", "total_batches": 2, "metrics": {"loss": value}},
                ]
            },
            headers=headers,
        )
        assert refused.status_code == 422, refused.text
        assert refused.json()["error"]["field"] == "rows[1].metrics.loss"
    assert client.get(f"{path}/metrics", params={"kind": "training"}).json() == []
