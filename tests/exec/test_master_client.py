"""MasterClient's retries: Retry-After, backoff with jitter, patience, 4xx at once.

The master is an httpx mock transport here (answers scripted per request) and ``time.sleep``
is recorded instead of slept; the restart of a real master is in
tests/master/test_backpressure.py.
"""

from __future__ import annotations

import random
from collections.abc import Iterator

import httpx
import pytest

from pedl.exec import MasterClient, MasterError
from pedl.exec import _master_client as mc


class Clock:
    """Stands in for time.monotonic/time.sleep: sleeping advances the clock."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.sleeps: list[float] = []

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    fake = Clock()
    monkeypatch.setattr(mc.time, "monotonic", fake.monotonic)
    monkeypatch.setattr(mc.time, "sleep", fake.sleep)
    return fake


def client_with(
    answers: Iterator[httpx.Response | Exception], *, give_up_after: float = 300.0
) -> tuple[MasterClient, list[httpx.Request]]:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        answer = next(answers)
        if isinstance(answer, Exception):
            raise answer
        return answer

    client = MasterClient("http://master", 7, "tok", give_up_after=give_up_after)
    client._http = httpx.Client(
        base_url="http://master/api/v1",
        headers=client._http.headers,
        transport=httpx.MockTransport(handler),
    )
    return client, seen


def shed(retry_after: str = "3", status: int = 503) -> httpx.Response:
    return httpx.Response(
        status, json={"error": {"message": "overloaded"}}, headers={"Retry-After": retry_after}
    )


def ok() -> httpx.Response:
    return httpx.Response(200, json={"ok": True})


def test_retry_after_is_honoured_with_jitter(clock: Clock) -> None:
    client, seen = client_with(iter([shed("3"), shed("2", status=429), ok()]))
    assert client.post("/trials/7/metrics", {"rows": []}) == {"ok": True}
    assert len(seen) == 3
    assert 3.0 <= clock.sleeps[0] <= 3.75 and 2.0 <= clock.sleeps[1] <= 2.5
    assert all(r.headers["Authorization"] == "Bearer tok" for r in seen)


def test_retries_leave_the_trials_python_random_state_alone(clock: Clock) -> None:
    """The trial's ``random`` state is saved in its checkpoints and must be a function of its
    batches: retries in the report thread (as many as the load causes) must not move it."""
    random.seed(5)
    before = random.getstate()
    client, _ = client_with(iter([shed("1"), httpx.ConnectError("refused"), shed("1", 429), ok()]))
    assert client.post("/trials/7/metrics", {"rows": []}) == {"ok": True}
    assert len(clock.sleeps) == 3
    assert random.getstate() == before


def test_connection_errors_and_5xx_back_off_exponentially_up_to_a_cap(clock: Clock) -> None:
    failures: list[httpx.Response | Exception] = [httpx.ConnectError("refused")] * 8
    failures += [httpx.Response(500, text="boom"), httpx.Response(502), ok()]
    client, seen = client_with(iter(failures))
    assert client.get("/trials/7") == {"ok": True}
    assert len(seen) == 11
    caps = [min(0.1 * 2**i, 5.0) for i in range(10)]
    for slept, cap in zip(clock.sleeps, caps, strict=True):
        assert cap / 2 <= slept <= cap
    assert max(clock.sleeps) <= 5.0


def test_it_gives_up_after_its_patience(clock: Clock) -> None:
    def forever() -> Iterator[Exception]:
        while True:
            yield httpx.ConnectError("refused")

    client, _ = client_with(forever(), give_up_after=30)
    started = clock.now
    with pytest.raises(MasterError, match="has not answered for 30 s"):
        client.post("/trials/7/metrics", {"rows": []})
    assert 30 <= clock.now - started <= 30.001  # never sleeps past its patience


def test_a_4xx_raises_at_once(clock: Clock) -> None:
    answer = httpx.Response(409, json={"error": {"message": "conflict!"}})
    client, seen = client_with(iter([answer]))
    with pytest.raises(MasterError, match="409 conflict!") as info:
        client.post("/trials/7/checkpoints", {})
    assert info.value.status == 409 and len(seen) == 1 and clock.sleeps == []


@pytest.mark.parametrize(
    ("env", "expected"),
    [({}, 300.0), ({"PEDL_MASTER_GIVE_UP_SECONDS": "20"}, 20.0)],
)
def test_patience_from_the_environment(env: dict[str, str], expected: float) -> None:
    base = {"PEDL_MASTER_URL": "http://m", "PEDL_TRIAL_ID": "3", "PEDL_TRIAL_TOKEN": "t"}
    client = MasterClient.from_env({**base, **env})
    try:
        assert client._give_up_after == expected
    finally:
        client.close()


def test_one_try_and_whether_the_master_was_reached(clock: Clock) -> None:
    client, seen = client_with(iter([httpx.ConnectError("refused"), ok(), shed(status=502)]))
    assert client.unreachable is False
    with pytest.raises(MasterError, match="ConnectError") as info:
        client.get("/trials/7/preempt", give_up_after=0)
    assert info.value.status is None and len(seen) == 1 and clock.sleeps == []
    assert client.unreachable is True
    assert client.get("/trials/7/preempt", give_up_after=0) == {"ok": True}
    assert client.unreachable is False
    with pytest.raises(MasterError, match="502"):
        client.get("/trials/7/preempt", give_up_after=0)
    assert client.unreachable is True
