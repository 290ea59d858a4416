"""Group commit of metric reports: the MetricIngestor directly and through the HTTP route."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

import httpx
import pytest
from sqlalchemy import func, select

from pedl.db import (
    Database,
    IngestUnavailableError,
    Metric,
    MetricIngestor,
    MetricRow,
    NotFoundError,
    TrialTokenError,
)
from pedl.db._ingest import BIG_REPORT_ROWS, _request
from pedl.db.metrics import ReportText, report_text
from pedl.master.api.trials import fast_metric_rows
from pedl.vocabulary import MetricKind
from tests.waits import scaled

from .helpers import bearer, create_experiment, create_trial
from .metric_bodies import training_body


def _count(database: Database, trial_id: int, batches: list[int] | None = None) -> int:
    query = select(func.count()).where(Metric.trial_id == trial_id)
    if batches is not None:
        query = query.where(Metric.total_batches.in_(batches))
    with database.session() as session:
        return session.scalar(query) or 0


def _rows(batches: list[int], kind: Any = MetricKind.TRAINING) -> list[MetricRow]:
    return [MetricRow(kind=kind, total_batches=b, metrics={"loss": 1.0 / b}) for b in batches]


def _answers(
    ingestor: MetricIngestor, submit: Callable[[], list[asyncio.Future[int]]]
) -> list[Any]:
    """On a new event loop: ``submit`` (queued before the writer starts, so they share its
    batches), then start the writer and gather the answers (errors as values); stop it."""

    async def scenario() -> list[Any]:
        waiters = submit()
        ingestor.start()
        return await asyncio.gather(*waiters, return_exceptions=True)

    try:
        return asyncio.run(scenario())
    finally:
        ingestor.stop()


def _trials(client: httpx.Client, database: Database, count: int) -> list[tuple[int, str]]:
    experiment_id = create_experiment(client)["id"]
    return [create_trial(database, experiment_id) for _ in range(count)]


def test_concurrent_posts_are_stored_once_and_visible_when_answered(
    client: httpx.Client, database: Database
) -> None:
    trials = _trials(client, database, 4)
    threads, per_thread = 12, 8
    failures: list[str] = []
    expected: dict[int, set[int]] = {trial_id: set() for trial_id, _ in trials}
    lock = threading.Lock()

    def worker(worker_id: int) -> None:
        trial_id, token = trials[worker_id % len(trials)]
        with httpx.Client(base_url=str(client.base_url), timeout=scaled(30)) as http:
            for i in range(per_thread):
                # Distinct keys per (worker, request); i + 1 of them, the first one sent twice.
                base = (worker_id * per_thread + i) * 100
                batches = [base + k + 1 for k in range(i + 1)]
                rows = [{"kind": "training", "total_batches": b, "metrics": {}} for b in batches]
                rows.append(dict(rows[0], metrics={"loss": 0.5}))
                response = http.post(
                    f"/trials/{trial_id}/metrics", json={"rows": rows}, headers=bearer(token)
                )
                stored = _count(database, trial_id, batches)
                with lock:
                    expected[trial_id].update(batches)
                    if response.status_code != 200:
                        failures.append(f"{response.status_code} {response.text}")
                    elif response.json() != {"trial_id": trial_id, "rows": len(batches)}:
                        failures.append(f"wrong answer {response.json()} for {len(batches)}")
                    elif stored != len(batches):
                        failures.append(f"answered before commit: {stored}/{len(batches)}")

    pool = [threading.Thread(target=worker, args=(n,)) for n in range(threads)]
    for thread in pool:
        thread.start()
    for thread in pool:
        thread.join(timeout=scaled(60))
    assert failures == []
    for trial_id, batches in expected.items():
        assert _count(database, trial_id) == len(batches) > 0
    with database.session() as session:
        loss = session.scalar(
            select(Metric.metrics).where(Metric.trial_id == trials[0][0], Metric.total_batches == 1)
        )
    assert loss == {"loss": 0.5}  # the last row for a key wins


def test_unknown_trial_in_a_batch_fails_alone(client: httpx.Client, database: Database) -> None:
    (first, _), (second, _) = _trials(client, database, 2)
    ingestor = MetricIngestor(database)
    # Queued before start: the writer takes all three in one batch.
    futures = [
        ingestor.submit(first, _rows([1, 2, 3])),
        ingestor.submit(987_654, _rows([1])),
        ingestor.submit(second, _rows([5, 5, 6])),
    ]
    ingestor.start()
    try:
        assert futures[0].result(timeout=scaled(30)) == 3
        with pytest.raises(NotFoundError):
            futures[1].result(timeout=scaled(30))
        assert futures[2].result(timeout=scaled(30)) == 2
    finally:
        ingestor.stop()
    assert (_count(database, first), _count(database, second)) == (3, 2)


def test_a_failing_request_is_retried_alone(client: httpx.Client, database: Database) -> None:
    (trial_id, _), (other, _) = _trials(client, database, 2)
    ingestor = MetricIngestor(database)
    good = ingestor.submit(trial_id, _rows([10, 20]))
    bad = ingestor.submit(other, _rows([30], kind="no-such-kind"))  # fails inside the upsert
    later = ingestor.submit(other, _rows([40]))
    ingestor.start()
    try:
        assert good.result(timeout=scaled(30)) == 2
        with pytest.raises(ValueError):
            bad.result(timeout=scaled(30))
        assert later.result(timeout=scaled(30)) == 1
    finally:
        ingestor.stop()
    assert (_count(database, trial_id), _count(database, other)) == (2, 1)


def test_stop_drains_the_queue_then_refuses(client: httpx.Client, database: Database) -> None:
    (trial_id, _), (other, _) = _trials(client, database, 2)
    ingestor = MetricIngestor(database, max_requests=7)
    ingestor.start()
    futures: list[Future[int]] = [
        ingestor.submit((trial_id, other)[n % 2], _rows([n + 1])) for n in range(60)
    ]
    ingestor.stop()
    assert all(future.done() for future in futures)
    assert [future.result() for future in futures] == [1] * 60
    assert _count(database, trial_id) + _count(database, other) == 60
    with pytest.raises(IngestUnavailableError):
        ingestor.ingest(trial_id, _rows([999]))


def test_postgresql_takes_the_text_of_big_reports_only() -> None:
    """Small reports stay rows there: one statement for a whole batch of them."""
    for count, dialect, as_text in [
        (BIG_REPORT_ROWS - 1, "postgresql", False),
        (BIG_REPORT_ROWS, "postgresql", True),
        (1, "sqlite", True),
    ]:
        rows = [
            {"kind": "training", "total_batches": b, "metrics": {"loss": 0.5}} for b in range(count)
        ]
        body = json.dumps({"rows": rows}).encode()
        fast = fast_metric_rows(body)
        assert fast is not None
        request = _request(1, fast, None, body, dialect)
        assert isinstance(request.report, ReportText) == as_text, (count, dialect)


def _queue_lengths(ingestor: MetricIngestor) -> list[int]:
    return [shard.qsize() for shard in ingestor._queues]


def test_big_reports_go_to_the_bulk_writers_and_a_trial_keeps_its_writer(
    client: httpx.Client, database: Database
) -> None:
    """PostgreSQL: small reports to the first writer, big ones to the bulk writer with the
    fewest requests; a trial with a report waiting sends the next to the same writer, whatever
    its size. SQLite refuses more than one writer."""
    if database.dialect == "sqlite":
        with pytest.raises(ValueError, match="1 on SQLite"):
            MetricIngestor(database, writers=2)
        return
    (small, _), (first, _), (second, _), (third, _) = _trials(client, database, 4)
    big = list(range(1, BIG_REPORT_ROWS + 1))
    ingestor = MetricIngestor(database, writers=3)  # not started: every report waits
    waiting = [
        ingestor.submit(small, _rows([1])),
        ingestor.submit(first, _rows(big)),
        ingestor.submit(second, _rows(big)),
    ]
    bulk = {first: 1, second: 2}  # each to the idler of the two
    expected = [1, 1, 1]
    assert _queue_lengths(ingestor) == expected
    waiting.append(ingestor.submit(small, _rows(big)))  # behind its small one: same writer
    waiting.append(ingestor.submit(first, _rows([BIG_REPORT_ROWS + 1])))
    expected[0] += 1
    expected[bulk[first]] += 1
    assert _queue_lengths(ingestor) == expected
    waiting.append(ingestor.submit(third, _rows(big)))  # to the bulk writer with fewer
    expected[bulk[second]] += 1
    assert _queue_lengths(ingestor) == expected
    ingestor.start()
    try:
        assert [future.result(timeout=scaled(60)) for future in waiting] == [
            1,
            BIG_REPORT_ROWS,
            BIG_REPORT_ROWS,
            BIG_REPORT_ROWS,
            1,
            BIG_REPORT_ROWS,
        ]
    finally:
        ingestor.stop()
    assert ingestor._writing == {}  # no trial is held to a writer once its reports are written
    assert ingestor._load == [0, 0, 0]
    assert _count(database, small) == BIG_REPORT_ROWS  # batches 1 to 100


def test_a_trials_reports_apply_in_order_across_writers(
    client: httpx.Client, database: Database
) -> None:
    """Each trial's reports, big and small mixed, apply in the order they came, its last one
    winning, however many writers share the trials."""
    writers = 1 if database.dialect == "sqlite" else 4
    trials = [trial_id for trial_id, _ in _trials(client, database, 6)]
    ingestor = MetricIngestor(database, writers=writers, max_requests=3)
    ingestor.start()
    try:
        futures = [
            ingestor.submit(
                trial_id,
                [
                    MetricRow(kind=MetricKind.TRAINING, total_batches=b, metrics={"loss": n})
                    for b in [1, *range(2 + n * BIG_REPORT_ROWS, 2 + (n + n % 2) * BIG_REPORT_ROWS)]
                ],
            )
            for n in range(20)
            for trial_id in trials
        ]
        answers = [future.result(timeout=scaled(60)) for future in futures]
    finally:
        ingestor.stop()
    assert answers == [1 + (n % 2) * BIG_REPORT_ROWS for n in range(20) for _ in trials]
    with database.session() as session:
        last = session.execute(
            select(Metric.trial_id, Metric.metrics).where(Metric.total_batches == 1)
        ).all()
    assert sorted(last) == [(trial_id, {"loss": 19}) for trial_id in sorted(trials)]
    assert [_count(database, trial_id) for trial_id in trials] == [1 + 10 * BIG_REPORT_ROWS] * 6


def test_timeout_drops_a_queued_request(client: httpx.Client, database: Database) -> None:
    (trial_id, _), *_ = _trials(client, database, 1)
    ingestor = MetricIngestor(database)  # not started: the writer looks stuck
    with pytest.raises(IngestUnavailableError, match="did not commit"):
        ingestor.ingest(trial_id, _rows([1]), timeout=0.05)
    ingestor.start()
    try:
        assert ingestor.ingest(trial_id, _rows([2])) == 1
    finally:
        ingestor.stop()
    with database.session() as session:
        stored = session.scalars(
            select(Metric.total_batches).where(Metric.trial_id == trial_id)
        ).all()
    assert list(stored) == [2]


def test_tokens_are_checked_in_the_batch(client: httpx.Client, database: Database) -> None:
    (first, first_token), (second, second_token) = _trials(client, database, 2)
    ingestor = MetricIngestor(database)
    good = ingestor.submit(first, _rows([1]), token=first_token)
    foreign = ingestor.submit(first, _rows([2]), token=second_token)
    bogus = ingestor.submit(second, _rows([3]), token="not-a-token")
    unknown = ingestor.submit(987_654, _rows([4]), token=second_token)
    ingestor.start()
    try:
        assert good.result(timeout=scaled(30)) == 1
        owners = []
        for future in (foreign, bogus, unknown):
            with pytest.raises(TrialTokenError) as caught:
                future.result(timeout=scaled(30))
            owners.append(caught.value.owner)
        assert owners == [second, None, second]
    finally:
        ingestor.stop()
    assert (_count(database, first), _count(database, second)) == (1, 0)


def test_async_submissions_are_answered_on_their_loop(
    client: httpx.Client, database: Database
) -> None:
    """submit_async: each batch's answers reach the loop in one callback; a waiter cancelled
    while queued is dropped; errors (tokens, unknown trials) are answered to their waiter."""
    (first, first_token), (second, _) = _trials(client, database, 2)
    ingestor = MetricIngestor(database, max_requests=16)

    def submit() -> list[asyncio.Future[int]]:
        dropped = ingestor.submit_async(first, _rows([1000]))
        dropped.cancel()  # its caller gave up before the writer started
        waiters = [
            ingestor.submit_async((first, second)[n % 2], _rows([n + 1, n + 1])) for n in range(50)
        ]
        waiters.append(ingestor.submit_async(first, _rows([2000]), token="not-a-token"))
        waiters.append(ingestor.submit_async(987_654, _rows([1])))
        waiters.append(ingestor.submit_async(first, _rows([3000]), token=first_token))
        return waiters

    answers = _answers(ingestor, submit)
    assert answers[:50] == [1] * 50
    assert isinstance(answers[50], TrialTokenError) and isinstance(answers[51], NotFoundError)
    assert answers[52] == 1
    assert _count(database, first) + _count(database, second) == 51
    assert _count(database, first, [1000, 2000]) == 0


def test_a_text_the_database_cannot_read_is_stored_from_its_rows(
    client: httpx.Client, database: Database
) -> None:
    """A body whose text passes ``report_text`` but that the database's JSON reader refuses (here
    cut short: a parser that disagreed with the schema's would look the same) fails its
    batch; each of its requests is then written alone, from its rows."""
    (trial_id, _), (other, _) = _trials(client, database, 2)
    whole = b'{"rows":[{"kind":"training","total_batches":5,"metrics":{"loss":0.5}}]}'
    rows = fast_metric_rows(whole)
    assert rows is not None and report_text(whole[:-1], rows, database.dialect) is not None
    ingestor = MetricIngestor(database, max_requests=16)

    answers = _answers(
        ingestor,
        lambda: [
            ingestor.submit_async(trial_id, rows, body=whole[:-1]),
            ingestor.submit_async(other, _rows([7])),
        ],
    )
    assert answers == [1, 1]
    assert _count(database, trial_id, [5]) == 1 and _count(database, other, [7]) == 1


def _text_report(batches: range, loss: float) -> tuple[bytes, list[Any]]:
    body = training_body(batches, loss)
    rows = fast_metric_rows(body)
    assert rows is not None
    return body, rows


def _losses(database: Database, trial_id: int) -> dict[int, float]:
    with database.session() as session:
        stored = session.execute(
            select(Metric.total_batches, Metric.metrics).where(Metric.trial_id == trial_id)
        )
        return {batches: metrics["loss"] for batches, metrics in stored}


def test_a_resent_text_report_is_written_again_as_an_upsert(
    client: httpx.Client, database: Database, caplog: pytest.LogCaptureFixture
) -> None:
    """The writer stores texts as plain inserts first: a report whose keys were stored before
    (committed, or earlier in its own batch) fails that try, and the batch is written again
    at once with the upsert (not request by request): every request answered, the last
    report's values kept, nothing doubled."""
    (trial_id, _), (other, _) = _trials(client, database, 2)
    size = BIG_REPORT_ROWS + 50
    first, first_rows = _text_report(range(1, size + 1), 0.5)
    assert report_text(first, first_rows, database.dialect) is not None
    ingestor = MetricIngestor(database, max_requests=16)
    assert _answers(ingestor, lambda: [ingestor.submit_async(trial_id, first_rows, body=first)])
    assert _losses(database, trial_id) == dict.fromkeys(range(1, size + 1), 0.5)

    # Each big enough to be read from its text on PostgreSQL too.
    resent, resent_rows = _text_report(range(size - 9, 2 * size - 9), 0.25)  # 10 stored
    again, again_rows = _text_report(range(size + 1, 2 * size + 1), 0.125)  # just resent
    new, new_rows = _text_report(range(1, size + 1), 0.75)
    ingestor = MetricIngestor(database, max_requests=16)
    with caplog.at_level("INFO", logger="pedl.db"):
        answers = _answers(
            ingestor,
            lambda: [
                ingestor.submit_async(trial_id, resent_rows, body=resent),
                ingestor.submit_async(other, new_rows, body=new),
                ingestor.submit_async(trial_id, again_rows, body=again),
            ],
        )
    assert answers == [size, size, size]
    assert "one by one" not in caplog.text
    assert _losses(database, trial_id) == {
        **dict.fromkeys(range(1, size - 9), 0.5),
        **dict.fromkeys(range(size - 9, size + 1), 0.25),
        **dict.fromkeys(range(size + 1, 2 * size + 1), 0.125),
    }
    assert _losses(database, other) == dict.fromkeys(range(1, size + 1), 0.75)
