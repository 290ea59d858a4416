"""The contract of :class:`pedl.core.TrialBackend`, written once and run against every
implementation: in memory, detached, local mode (a real :class:`LocalExperiment`'s backend on
its SQLite record), REST (a real master, with its orchestrator, over HTTP on loopback: a trial
and its attempt's token) and a link (a :class:`LinkServer` in a thread serving a memory
backend to a :class:`LinkBackend`).

Each fixture gives the backend and a reader of what it recorded (metric rows, checkpoints,
completed lengths), read where the platform keeps them (the memory backend's fields, the
record's database), so the cases assert the contract, not an implementation. The searcher of
each is a single search to :data:`LENGTH` batches. The detached backend records nothing: its
cases check that every call is taken and that it has no work.

Cases: a new trial gets its length, the same until it completes it; it is not asked to stop
until the platform asks (a pause); one row per ``(kind, total_batches)``, latest wins; a
row's ``total_epochs`` is recorded with it (None where not given); non-finite values survive;
a registered checkpoint is recorded by the time the call returns; a completed length is heard
once and the searcher moves on (here: closes the trial); a length past the one asked is
refused (raised by that call, or by the next one where reports are queued); reports made
before a ``next_length`` are recorded when it answers.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import math
import queue
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from pedl import core
from pedl.core._backend_link import LinkBackend, backend_handlers
from pedl.core._detached import DetachedBackend
from pedl.core._link_transport import LinkClient, LinkError, LinkServer
from pedl.db import Database
from pedl.db import checkpoints as checkpoints_repo
from pedl.db import metrics as metrics_repo
from pedl.db import searcher as searcher_repo
from pedl.exec import MasterClient, MasterError, ReportSender, RestBackend
from pedl.local import LocalExperiment
from pedl.vocabulary import ExperimentState, MetricKind, decode_metric_value
from tests.waits import scaled

LENGTH = 10
"""The length every fixture's searcher asks for (``single``, ``max_length: {batches: 10}``)."""

Rows = dict[tuple[str, int], dict[str, float]]
Epochs = dict[tuple[str, int], float | None]


@dataclass
class Subject:
    """A backend and a reader of its record (``None`` for the detached backend: no record)."""

    backend: core.TrialBackend
    rows: Callable[[], Rows] | None
    checkpoints: Callable[[], list[tuple[str, int]]] | None
    completed: Callable[[], list[int]] | None
    refused: type[BaseException] = ValueError
    """What a call the platform refuses raises."""
    ask_to_stop: Callable[[], None] | None = None
    """The platform asks the trial to stop (a pause; ``None``: nothing can ask)."""
    epochs: Callable[[], Epochs] | None = None
    """Each recorded row's ``total_epochs``."""

    @property
    def records(self) -> bool:
        return self.rows is not None


# the implementations --------------------------------------------------------------------------


def memory_subject(backend: core.MemoryBackend) -> Subject:
    def ask_to_stop() -> None:
        backend.preempt = True

    return Subject(
        backend,
        rows=lambda: {(str(k), b): dict(m) for (k, b), m in backend.metrics.items()},
        checkpoints=lambda: list(backend.checkpoints),
        completed=lambda: [length for length, _ in backend.completed],
        ask_to_stop=ask_to_stop,
        epochs=lambda: {(str(k), b): e for (k, b), e in backend.epochs.items()},
    )


class DbReader:
    """What a trial recorded in a database of the master's schema (local mode's or the
    master's)."""

    def __init__(self, database: Database, experiment_id: int, trial_id: int) -> None:
        self._database = database
        self._experiment_id = experiment_id
        self._trial_id = trial_id

    def rows(self) -> Rows:
        with self._database.session() as session:
            return {
                (str(row.kind), row.total_batches): {
                    name: decode_metric_value(value) for name, value in row.metrics.items()
                }
                for row in metrics_repo.list_metrics(session, self._trial_id)
            }

    def epochs(self) -> Epochs:
        with self._database.session() as session:
            return {
                (str(row.kind), row.total_batches): row.total_epochs
                for row in metrics_repo.list_metrics(session, self._trial_id)
            }

    def checkpoints(self) -> list[tuple[str, int]]:
        with self._database.session() as session:
            found, _ = checkpoints_repo.list_checkpoints(session, trial_id=self._trial_id)
            return [(checkpoint.uuid, checkpoint.total_batches) for checkpoint, _ in found]

    def completed(self) -> list[int]:
        with self._database.session() as session:
            events = searcher_repo.list_searcher_events(session, self._experiment_id)
            return [
                int(e.event["length"])
                for e in events
                if e.event.get("kind") == "validation_completed"
            ]

    def subject(
        self,
        backend: core.TrialBackend,
        refused: type[BaseException],
        ask_to_stop: Callable[[], None],
    ) -> Subject:
        return Subject(
            backend, self.rows, self.checkpoints, self.completed, refused, ask_to_stop, self.epochs
        )


LOCAL_CONFIG = f"""
name: backend-contract
entrypoint: model_def:MyTrial
hyperparameters: {{global_batch_size: 4}}
searcher: {{name: single, metric: val_accuracy, smaller_is_better: false,
           max_length: {{batches: {LENGTH}}}}}
"""


@contextlib.contextmanager
def local_subject(tmp_path: Path) -> Iterator[Subject]:
    model = tmp_path / "model"
    model.mkdir()
    (model / "model_def.py").write_text("class MyTrial:\n    pass\n")
    (tmp_path / "experiment.yaml").write_text(LOCAL_CONFIG)
    experiment = LocalExperiment.create(tmp_path / "experiment.yaml", model, tmp_path / "out")
    try:
        (trial_id,) = experiment.driver.runnable_trials()
        experiment._apply(experiment.driver.trial_started(trial_id))  # as run() starts it
        reader = DbReader(experiment.database, experiment.experiment_id, trial_id)

        def pause() -> None:  # as a SIGINT does (LocalExperiment.run)
            experiment._apply(experiment.driver.set_experiment_state(ExperimentState.PAUSED))

        yield reader.subject(experiment.backend(trial_id), ValueError, pause)
    finally:
        experiment.close()


@contextlib.contextmanager
def rest_subject(tmp_path: Path) -> Iterator[Subject]:
    from tests.master.test_trial_tokens import Attempt, orchestrated_master

    launched: queue.Queue[Attempt] = queue.Queue()
    done = threading.Event()

    def attempt(run: Attempt) -> int:  # the trial's "process": the test drives it
        assert run.api.get(f"{run.path}/start").status_code == 200
        launched.put(run)
        done.wait(scaled(120))
        return 0

    db_url = f"sqlite:///{tmp_path / 'pedl.db'}"
    with orchestrated_master(db_url, tmp_path, attempt) as master:
        experiment_id = master.create_experiment()
        run = launched.get(timeout=scaled(60))
        client = MasterClient(master.url, run.launch.trial_id, run.launch.token)
        sender = ReportSender(client)
        try:
            reader = DbReader(master.database, experiment_id, run.launch.trial_id)

            def pause() -> None:
                answer = master.http.post(f"/experiments/{experiment_id}/pause")
                assert answer.status_code == 200, answer.text

            yield reader.subject(RestBackend(client, sender), MasterError, pause)
        finally:
            done.set()
            with contextlib.suppress(MasterError):
                sender.close()
            client.close()


@contextlib.contextmanager
def link_subject() -> Iterator[Subject]:
    served = core.MemoryBackend([LENGTH])
    server = LinkServer(
        backend_handlers(served),
        address_env="PEDL_TEST_BACKEND_LINK",
        key_env="PEDL_TEST_BACKEND_LINK_KEY",
        name="pedl-test-backend-link",
        logger=logging.getLogger("tests.backend_contract"),
    )
    client = LinkClient.connect(
        dict(server.env),
        address_env="PEDL_TEST_BACKEND_LINK",
        key_env="PEDL_TEST_BACKEND_LINK_KEY",
        peer="the test",
    )
    assert client is not None
    try:
        yield dataclasses.replace(
            memory_subject(served), backend=LinkBackend(client), refused=LinkError
        )
    finally:
        client.close()
        server.close()


KINDS = ["memory", "detached", "local", "rest", "link"]


@pytest.fixture(params=KINDS)
def subject(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Subject]:
    kind = request.param
    if kind == "memory":
        yield memory_subject(core.MemoryBackend([LENGTH]))
    elif kind == "detached":
        yield Subject(DetachedBackend(), None, None, None)
    elif kind == "local":
        with local_subject(tmp_path) as made:
            yield made
    elif kind == "rest":
        with rest_subject(tmp_path) as made:
            yield made
    else:
        with link_subject() as made:
            yield made


# the cases ------------------------------------------------------------------------------------


def test_a_new_trial_gets_its_length_until_it_completes_it_and_is_not_asked_to_stop(
    subject: Subject,
) -> None:
    backend = subject.backend
    expected = LENGTH if subject.records else None
    assert backend.next_length() == expected
    assert backend.next_length() == expected
    assert backend.should_preempt() is False
    assert backend.should_preempt() is False


def test_one_row_per_kind_and_batches_the_latest_wins(subject: Subject) -> None:
    backend = subject.backend
    backend.next_length()
    backend.write_metrics(MetricKind.TRAINING, 5, {"loss": 1.0})
    backend.write_metrics(MetricKind.TRAINING, 5, {"loss": 0.5})
    backend.write_metrics(MetricKind.VALIDATION, 5, {"val_accuracy": 0.7})
    backend.write_metrics(MetricKind.TRAINING, 3, {"loss": 2.0})
    backend.next_length()  # what was reported before it is recorded when it answers
    if subject.rows is None:
        return
    assert subject.rows() == {
        ("training", 3): {"loss": 2.0},
        ("training", 5): {"loss": 0.5},
        ("validation", 5): {"val_accuracy": 0.7},
    }


def test_a_row_carries_its_epochs_where_the_trial_knows_them(subject: Subject) -> None:
    backend = subject.backend
    backend.next_length()
    backend.write_metrics(MetricKind.TRAINING, 4, {"loss": 1.0}, 0.5)
    backend.write_metrics(MetricKind.VALIDATION, 8, {"val_accuracy": 0.7}, 1.0)
    backend.write_metrics(MetricKind.TRAINING, 8, {"loss": 0.5})
    backend.write_metrics(MetricKind.TRAINING, 4, {"loss": 0.9}, 0.5)  # replayed: latest wins
    backend.next_length()
    if subject.epochs is None:
        return
    assert subject.epochs() == {
        ("training", 4): 0.5,
        ("training", 8): None,
        ("validation", 8): 1.0,
    }


def test_non_finite_values_survive(subject: Subject) -> None:
    backend = subject.backend
    backend.next_length()
    values = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf, "tiny": 5e-324}
    backend.write_metrics(MetricKind.TRAINING, 4, values)
    backend.next_length()
    if subject.rows is None:
        return
    row = subject.rows()[("training", 4)]
    assert math.isnan(row["nan"])
    assert (row["inf"], row["-inf"], row["tiny"]) == (math.inf, -math.inf, 5e-324)


def test_a_registered_checkpoint_is_recorded_when_the_call_returns(subject: Subject) -> None:
    backend = subject.backend
    backend.next_length()
    storage_id = str(uuid.uuid4())
    metadata: dict[str, Any] = {"steps_completed": 4, "framework": "test"}
    backend.register_checkpoint(storage_id, 4, metadata, {"state.bin": 12})
    if subject.checkpoints is None:
        return
    assert subject.checkpoints() == [(storage_id, 4)]
    later = str(uuid.uuid4())
    backend.register_checkpoint(later, 8, {"steps_completed": 8}, {"state.bin": 12})
    assert subject.checkpoints() == [(storage_id, 4), (later, 8)]


def test_a_completed_length_is_heard_once_and_the_searcher_moves_on(subject: Subject) -> None:
    backend = subject.backend
    length = backend.next_length()
    if length is None:  # detached: no work, and the calls are taken
        backend.write_metrics(MetricKind.VALIDATION, 1, {"val_accuracy": 0.5})
        backend.complete(1, 0.5)
        assert backend.next_length() is None
        return
    backend.write_metrics(MetricKind.VALIDATION, length, {"val_accuracy": 0.9})
    backend.complete(length, 0.9)
    assert backend.next_length() is None  # a single search: the trial is closed
    assert subject.completed is not None and subject.rows is not None
    assert subject.completed() == [length]
    assert subject.rows()[("validation", length)] == {"val_accuracy": 0.9}


def test_a_length_past_the_one_asked_is_refused(subject: Subject) -> None:
    backend = subject.backend
    length = backend.next_length()
    if length is None:  # detached: no work, and the calls are taken
        backend.complete(LENGTH + 100, 0.5)
        return
    with pytest.raises(subject.refused, match=str(length + 100)):
        backend.complete(length + 100, 0.5)
        backend.next_length()  # a queued report's refusal is raised by the next call
    assert subject.completed is not None
    assert subject.completed() == []


def test_the_trial_is_asked_to_stop_once_the_platform_asks(subject: Subject) -> None:
    backend = subject.backend
    backend.next_length()
    assert backend.should_preempt() is False
    if subject.ask_to_stop is None:  # detached: nothing asks
        return
    subject.ask_to_stop()
    deadline = time.monotonic() + scaled(30)
    while not backend.should_preempt():  # the master's answer may follow the pause a moment later
        assert time.monotonic() < deadline, "the trial was never asked to stop"
        time.sleep(0.05)
