"""P5b: report latency with 200 trials reporting every 200 ms beside 20 polling readers.

    cd bench && ../.venv/bin/python p5b_load.py --backend sqlite|postgresql \\
        [--trials 200] [--period 0.2] [--readers 20] [--reader-period 0.5] [--seconds 30] \\
        [--saturate] [--out FILE.jsonl]

A master runs as a separate process on loopback with a fresh database (``p5_master``: an
SQLite file or a new PostgreSQL database). Its experiment (PAUSED, so no trial process runs)
gets ``--trials`` trials through the repository. One asyncio load generator (the raw
keep-alive client of ``p5_latency``, one connection per simulated trial or reader) runs:

- ``--trials`` reporters (``p5_latency.trial_loop``), each POSTing 1 to 5 training rows
  (cycling) to ``/trials/{id}/metrics`` every ``--period`` seconds, staggered over the period
  (200 x 0.2 s = 1,000 requests/s); a loop that falls behind sends at once, never in bursts;
- ``--readers`` readers, each every ``--reader-period`` seconds GETting
  ``/experiments/{id}/trials`` (the first page, 100 trials) and then one trial's
  ``/metrics`` (cycling over the trials).

``--saturate``: the reporters send their next request as soon as the previous one is answered
(no period, no readers unless ``--readers`` is given explicitly): the served rate is the
saturation throughput. Latency = send to full answer, per request; the first 5 s are the
warm-up and are left out. Errors are counted by status. Prints one JSON summary line.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import _env
import p5_latency
import p5_master

WARMUP_S = p5_latency.WARMUP_S


async def reader_loop(
    raw: p5_latency.RawClient,
    paths: list[str],
    headers: dict[str, str],
    *,
    start: float,
    phase: float,
    period: float,
    seconds: float,
    recorder: p5_latency.Recorder,
) -> None:
    due = start + phase
    turn = 0
    while due < start + seconds:
        delay = due - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
        for path in (paths[0], paths[1 + turn % (len(paths) - 1)]):
            sent_at = time.perf_counter()
            try:
                status, answer = await raw.get(path, headers)
                if status != 200:
                    recorder.errors.append(f"{status} {answer[:200]}")
            except (OSError, asyncio.IncompleteReadError) as err:
                recorder.errors.append(repr(err))
            recorder.samples.append((sent_at - start, time.perf_counter() - sent_at))
        turn += 1
        due = max(due + period, time.perf_counter())


async def run_load(
    url: str,
    experiment_id: int,
    trials: list[tuple[int, str]],
    args: argparse.Namespace,
    user_token: str,
) -> tuple[p5_latency.Recorder, p5_latency.Recorder, float]:
    host, port = url.removeprefix("http://").split(":")
    reporters = p5_latency.Recorder()
    readers = p5_latency.Recorder()
    clients: list[p5_latency.RawClient] = []
    period = 0.0 if args.saturate else args.period
    start = time.perf_counter() + 0.5
    tasks = []
    for i, (trial_id, token) in enumerate(trials):
        raw = p5_latency.RawClient(host, int(port))
        clients.append(raw)

        async def post(path: str, body: bytes, raw: Any = raw, token: str = token) -> Any:
            return await raw.post(path, body, p5_latency._headers(token))

        tasks.append(
            p5_latency.trial_loop(
                post,
                trial_id,
                start=start,
                phase=args.period * i / len(trials) if not args.saturate else 0.0,
                period=period,
                seconds=args.seconds,
                recorder=reporters,
            )
        )
    paths = [f"/api/v1/experiments/{experiment_id}/trials"]
    paths += [f"/api/v1/trials/{trial_id}/metrics" for trial_id, _ in trials]
    for i in range(args.readers):
        reader = p5_latency.RawClient(host, int(port))
        clients.append(reader)
        tasks.append(
            reader_loop(
                reader,
                paths,
                {"Authorization": f"Bearer {user_token}"},
                start=start,
                phase=args.reader_period * i / max(args.readers, 1),
                period=args.reader_period,
                seconds=args.seconds,
                recorder=readers,
            )
        )
    try:
        await asyncio.gather(*tasks)
        wall = time.perf_counter() - start
    finally:
        for client in clients:
            await client.close()
    return reporters, readers, wall


def summarize(recorder: p5_latency.Recorder, wall: float) -> dict[str, Any]:
    steady = [lat for at, lat in recorder.samples if at >= WARMUP_S]
    by_status = collections.Counter(error.split(" ", 1)[0] for error in recorder.errors)
    return {
        **p5_latency.stats(steady, max(wall - WARMUP_S, 1e-9)),
        "errors": dict(by_status),
        "first_error": recorder.errors[0] if recorder.errors else None,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--backend", choices=["sqlite", "postgresql"], required=True)
    parser.add_argument("--trials", type=int, default=200)
    parser.add_argument("--period", type=float, default=0.2, help="seconds between reports")
    parser.add_argument("--readers", type=int, default=None, help="default 20 (0 saturating)")
    parser.add_argument("--reader-period", type=float, default=0.5)
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--saturate", action="store_true", help="report as fast as answered")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    if args.readers is None:
        args.readers = 0 if args.saturate else 20

    with tempfile.TemporaryDirectory(prefix="pedl-p5b-") as tmp:
        home = Path(tmp)
        backend = p5_master.make_backend(args.backend, home)
        master = p5_master.MasterProcess(home, backend.url, spare_workers=0)
        try:
            master.start()
            trials = p5_master.make_trials(master, args.trials)
            experiment_id = 1  # the only experiment of a fresh database
            load_before = _env.load_average()[0]
            cpu_before = p5_master.cpu_seconds(master.pid)
            readers_pids = p5_master.child_pids(master.pid)  # its read processes
            readers_before = p5_master.cpu_seconds_of(readers_pids)
            pg_before = p5_master.postgres_cpu_seconds()
            client_before = time.process_time()
            reporters, readers, wall = asyncio.run(
                run_load(master.url, experiment_id, trials, args, master.sign_in())
            )
            master_cpu = p5_master.cpu_seconds(master.pid) - cpu_before
            readers_cpu = p5_master.cpu_seconds_of(readers_pids) - readers_before
            pg_cpu = p5_master.postgres_cpu_seconds() - pg_before
            client_cpu = time.process_time() - client_before
            load_after = _env.load_average()[0]
            stored = p5_master.count_metric_rows(backend.url)
            if reporters.errors or readers.errors:
                print(master.log()[-4000:], file=sys.stderr)
        finally:
            master.stop()
            backend.drop()

    summary = {
        "summary": "p5b-saturate" if args.saturate else "p5b",
        "backend": args.backend,
        "trials": args.trials,
        "period_s": None if args.saturate else args.period,
        "readers": args.readers,
        "reader_period_s": args.reader_period,
        "seconds": args.seconds,
        "target_req_per_s": None if args.saturate else round(args.trials / args.period, 1),
        "reports": summarize(reporters, wall),
        "late_sends": reporters.late,
        "reads": summarize(readers, wall),
        "master_cpu_cores": round(master_cpu / wall, 2),
        "read_processes": len(readers_pids),
        "read_processes_cpu_cores": round(readers_cpu / wall, 2),
        "postgres_cpu_cores": round(pg_cpu / wall, 2),
        "loadgen_cpu_cores": round(client_cpu / wall, 2),
        "loadavg_1m": [load_before, load_after],
        "stored_rows": stored,
        "date": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
        "machine": _env.machine(),
    }
    print(json.dumps(summary), flush=True)
    if args.out:
        with args.out.open("a") as out:
            out.write(json.dumps(summary) + "\n")


if __name__ == "__main__":
    main()
