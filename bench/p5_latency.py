"""P5(b): API latency of ``POST /trials/{id}/metrics`` with many trials reporting periodically.

    .venv/bin/python bench/p5_latency.py --backend sqlite|postgresql \\
        [--trials 200] [--period 0.1] [--seconds 60] [--out FILE.jsonl]

A master runs as a separate process on loopback with a fresh database. One asyncio load
generator (by default a minimal raw HTTP/1.1 client on asyncio streams, ``--client httpx`` for
httpx.AsyncClient; one keep-alive connection per simulated trial) runs ``--trials``
trial loops, staggered evenly over one period; each sends one small POST (1 to 5 training rows,
cycling) per ``--period`` seconds for ``--seconds`` seconds, then stops. A loop that falls
behind does not catch up with a burst: its next send is due one period after the previous due
time, or now if that has passed (a real trial reports synchronously, too), and the late sends
are counted. Latency = send to full answer, measured per request in the load generator (which
shares the machine's cores with the master: both CPU uses are reported). The first 5 s are
the warm-up and are reported separately. Prints one JSON summary line.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import _env
import httpx
import p5_master

WARMUP_S = 5.0


class Recorder:
    def __init__(self) -> None:
        self.samples: list[tuple[float, float]] = []  # (send time since start, latency)
        self.errors: list[str] = []
        self.late = 0


class RawClient:
    """A minimal HTTP/1.1 keep-alive client on asyncio streams: ~50 us of CPU per request
    against httpx.AsyncClient's ~15 ms, so the load generator does not starve the master."""

    def __init__(self, host: str, port: int) -> None:
        self.host, self.port = host, port
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def post(self, path: str, body: bytes, headers: dict[str, str]) -> tuple[int, str]:
        """Send one POST and read its answer; after a failure the next call reconnects."""
        head = "".join(f"{k}: {v}\r\n" for k, v in headers.items())
        return await self.request(
            f"POST {path} HTTP/1.1\r\nHost: {self.host}\r\n{head}"
            f"Content-Length: {len(body)}\r\n\r\n".encode()
            + body
        )

    async def get(self, path: str, headers: dict[str, str] | None = None) -> tuple[int, str]:
        """Send one GET and read its answer; after a failure the next call reconnects."""
        head = "".join(f"{k}: {v}\r\n" for k, v in (headers or {}).items())
        message = f"GET {path} HTTP/1.1\r\nHost: {self.host}\r\n{head}\r\n"
        return await self.request(message.encode())

    async def request(self, message: bytes) -> tuple[int, str]:
        """Send one raw request and read its answer (status, body text)."""
        try:
            if self.writer is None:
                self.reader, self.writer = await asyncio.open_connection(self.host, self.port)
            assert self.reader is not None
            self.writer.write(message)
            raw = await self.reader.readuntil(b"\r\n\r\n")
            status = int(raw.split(b" ", 2)[1])
            length = 0
            for line in raw.split(b"\r\n")[1:]:
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":", 1)[1])
            answer = await self.reader.readexactly(length)
            return status, answer.decode(errors="replace")
        except (OSError, asyncio.IncompleteReadError):
            await self.close()
            raise

    async def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
        self.reader = self.writer = None


Post = Callable[[str, bytes], Awaitable[tuple[int, str]]]
"""Send one metrics POST (path, body) for a trial; answer (status, body text)."""


async def trial_loop(
    post: Post,
    trial_id: int,
    *,
    start: float,
    phase: float,
    period: float,
    seconds: float,
    recorder: Recorder,
) -> None:
    due = start + phase
    batches = 0
    sent = 0
    while due < start + seconds:
        delay = due - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
        rows = 1 + sent % 5
        body = p5_master.rows_body(batches, rows, seed=trial_id)
        sent_at = time.perf_counter()
        try:
            status, answer = await post(f"/api/v1/trials/{trial_id}/metrics", body)
            if status != 200:
                recorder.errors.append(f"{status} {answer[:200]}")
        except (httpx.HTTPError, OSError, asyncio.IncompleteReadError) as err:
            recorder.errors.append(repr(err))
        done = time.perf_counter()
        recorder.samples.append((sent_at - start, done - sent_at))
        batches += rows
        sent += 1
        if done > due + period:  # missed the next slot: send again at once, no burst
            recorder.late += 1
        due = max(due + period, done)


def stats(latencies: list[float], window: float) -> dict[str, Any]:
    ordered = sorted(latencies)
    ms = {
        f"{name}_ms": round(1000 * p5_master.quantile(ordered, q), 2)
        for name, q in (("p50", 0.5), ("p90", 0.9), ("p99", 0.99), ("p999", 0.999))
    }
    return {
        "requests": len(ordered),
        "req_per_s": round(len(ordered) / window, 1),
        **ms,
        "max_ms": round(1000 * ordered[-1], 2) if ordered else None,
    }


def _headers(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}


async def load(
    url: str, trials: list[tuple[int, str]], period: float, seconds: float, client: str
) -> tuple[Recorder, float]:
    """Run every trial's loop with the chosen client; return the samples and the wall time."""
    recorder = Recorder()
    posts: list[Post] = []
    closers: list[Callable[[], Awaitable[None]]] = []
    if client == "raw":
        host, port = url.removeprefix("http://").split(":")
        for _, token in trials:
            raw = RawClient(host, int(port))
            posts.append(functools.partial(_raw_post, raw, _headers(token)))
            closers.append(raw.close)
    else:
        limits = httpx.Limits(
            max_connections=len(trials) + 10, max_keepalive_connections=len(trials)
        )
        http = httpx.AsyncClient(base_url=url, timeout=60, limits=limits)
        posts = [functools.partial(_httpx_post, http, _headers(token)) for _, token in trials]
        closers.append(http.aclose)
    start = time.perf_counter() + 0.5
    try:
        await asyncio.gather(
            *(
                trial_loop(
                    post,
                    trial_id,
                    start=start,
                    phase=period * i / len(trials),
                    period=period,
                    seconds=seconds,
                    recorder=recorder,
                )
                for i, (post, (trial_id, _)) in enumerate(zip(posts, trials, strict=True))
            )
        )
        wall = time.perf_counter() - start
    finally:
        for close in closers:
            await close()
    return recorder, wall


async def _raw_post(
    raw: RawClient, headers: dict[str, str], path: str, body: bytes
) -> tuple[int, str]:
    return await raw.post(path, body, headers)


async def _httpx_post(
    http: httpx.AsyncClient, headers: dict[str, str], path: str, body: bytes
) -> tuple[int, str]:
    response = await http.post(path, content=body, headers=headers)
    return response.status_code, response.text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--backend", choices=["sqlite", "postgresql"], required=True)
    parser.add_argument("--trials", type=int, default=200)
    parser.add_argument("--period", type=float, default=0.1, help="seconds between reports")
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--out", type=Path)
    parser.add_argument(
        "--client", choices=["httpx", "raw"], default="raw", help="load generator's HTTP client"
    )
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="pedl-p5-") as tmp:
        home = Path(tmp)
        backend = p5_master.make_backend(args.backend, home)
        master = p5_master.MasterProcess(home, backend.url, spare_workers=0)
        try:
            master.start()
            trials = p5_master.make_trials(master, args.trials)
            load_before = _env.load_average()[0]
            cpu_before = p5_master.cpu_seconds(master.pid)
            pg_before = p5_master.postgres_cpu_seconds()
            client_before = time.process_time()
            recorder, wall = asyncio.run(
                load(master.url, trials, args.period, args.seconds, args.client)
            )
            master_cpu = p5_master.cpu_seconds(master.pid) - cpu_before
            pg_cpu = p5_master.postgres_cpu_seconds() - pg_before
            client_cpu = time.process_time() - client_before
            load_after = _env.load_average()[0]
            stored = p5_master.count_metric_rows(backend.url)
            if recorder.errors:
                print(master.log()[-6000:], file=sys.stderr)
        finally:
            master.stop()
            backend.drop()

    steady = [lat for at, lat in recorder.samples if at >= WARMUP_S]
    warm = [lat for at, lat in recorder.samples if at < WARMUP_S]
    summary = {
        "summary": "p5b",
        "backend": args.backend,
        "trials": args.trials,
        "period_s": args.period,
        "seconds": args.seconds,
        "target_req_per_s": round(args.trials / args.period, 1),
        "client": args.client,
        "steady": stats(steady, max(wall - WARMUP_S, 1e-9)),
        "warmup": stats(warm, WARMUP_S),
        "errors": len(recorder.errors),
        "first_error": recorder.errors[0] if recorder.errors else None,
        "late_sends": recorder.late,
        "master_cpu_cores": round(master_cpu / wall, 2),
        "postgres_cpu_cores": round(pg_cpu / wall, 2),
        "loadgen_cpu_cores": round(client_cpu / wall, 2),
        "loadavg_1m": [load_before, load_after],
        "stored_rows": stored,
        "machine": _env.machine(),
    }
    print(json.dumps(summary), flush=True)
    if args.out:
        with args.out.open("a") as out:
            out.write(json.dumps(summary) + "\n")


if __name__ == "__main__":
    main()
