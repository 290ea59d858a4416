"""P5(a): metric rows/s ingested through ``POST /trials/{id}/metrics`` into SQLite or PostgreSQL.

    .venv/bin/python bench/p5_throughput.py --backend sqlite|postgresql \\
        [--batch 1000] [--threads 4] [--requests 40] [--reps 3] [--out FILE.jsonl]

A master runs as a separate process on loopback with a fresh database. Each of ``--threads``
client threads owns one trial and posts ``--requests`` bodies of ``--batch`` new training rows
(distinct ``total_batches``, two metrics each) back to back on its own keep-alive connection.
The bodies are serialised before the clock starts, so the load generator mostly waits on the
socket. rows/s = rows acknowledged / wall time from the first send to the last answer. One
warm-up round per repetition is not counted. Each repetition prints one JSON line; the last
line is the summary (median and range over repetitions). Every run checks that the database
holds exactly the rows that were acknowledged.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import p5_master


def post_all(url: str, trial_id: int, token: str, bodies: list[bytes], errors: list[str]) -> None:
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    with httpx.Client(base_url=url, timeout=120) as http:
        for body in bodies:
            response = http.post(
                f"/api/v1/trials/{trial_id}/metrics", content=body, headers=headers
            )
            if response.status_code != 200:
                errors.append(f"{response.status_code} {response.text[:200]}")
                return


def run_round(
    master: p5_master.MasterProcess,
    trials: list[tuple[int, str]],
    batch: int,
    requests: int,
    first_batch: int,
) -> dict[str, Any]:
    bodies = {
        trial_id: [
            p5_master.rows_body(first_batch + r * batch, batch, seed=trial_id)
            for r in range(requests)
        ]
        for trial_id, _ in trials
    }
    errors: list[str] = []
    threads = [
        threading.Thread(target=post_all, args=(master.url, tid, tok, bodies[tid], errors))
        for tid, tok in trials
    ]
    cpu_before = p5_master.cpu_seconds(master.pid)
    pg_before = p5_master.postgres_cpu_seconds()
    client_before = time.process_time()
    load = p5_master.loadavg()
    start = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    wall = time.perf_counter() - start
    master_cpu = p5_master.cpu_seconds(master.pid) - cpu_before
    if errors:
        raise RuntimeError(f"{len(errors)} failed requests, first: {errors[0]}")
    rows = batch * requests * len(trials)
    return {
        "rows": rows,
        "wall_s": round(wall, 3),
        "rows_per_s": round(rows / wall),
        "master_cpu_cores": round(master_cpu / wall, 2),
        "rows_per_master_cpu_s": round(rows / master_cpu),
        "postgres_cpu_cores": round((p5_master.postgres_cpu_seconds() - pg_before) / wall, 2),
        "client_cpu_cores": round((time.process_time() - client_before) / wall, 2),
        "loadavg_1m_before": load,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--backend", choices=["sqlite", "postgresql"], required=True)
    parser.add_argument("--batch", type=int, default=1000, help="rows per request")
    parser.add_argument("--threads", type=int, default=4, help="client threads (one trial each)")
    parser.add_argument("--requests", type=int, default=40, help="requests per thread per round")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()

    results: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="pedl-p5-") as tmp:
        home = Path(tmp)
        backend = p5_master.make_backend(args.backend, home)
        master = p5_master.MasterProcess(home, backend.url)
        try:
            master.start()
            trials = p5_master.make_trials(master, args.threads)
            next_batch = 0
            run_round(master, trials, args.batch, 5, next_batch)  # warm-up
            next_batch += 5 * args.batch
            acknowledged = 5 * args.batch * args.threads
            for rep in range(args.reps):
                result = run_round(master, trials, args.batch, args.requests, next_batch)
                next_batch += args.requests * args.batch
                acknowledged += result["rows"]
                result.update(rep=rep, backend=args.backend, batch=args.batch, threads=args.threads)
                print(json.dumps(result), flush=True)
                results.append(result)
            stored = p5_master.count_metric_rows(backend.url)
            if stored != acknowledged:
                raise RuntimeError(f"{acknowledged} rows acknowledged but {stored} stored")
        finally:
            master.stop()
            backend.drop()
    rates = [r["rows_per_s"] for r in results]
    summary = {
        "summary": "p5a",
        "backend": args.backend,
        "batch": args.batch,
        "threads": args.threads,
        "requests_per_thread": args.requests,
        "n": len(rates),
        "rows_per_s_median": statistics.median(rates),
        "rows_per_s_min": min(rates),
        "rows_per_s_max": max(rates),
        "master_cpu_cores_median": statistics.median(r["master_cpu_cores"] for r in results),
        "rows_per_master_cpu_s_median": statistics.median(
            r["rows_per_master_cpu_s"] for r in results
        ),
        "stored_rows_checked": stored,
        **p5_master.machine(),
    }
    print(json.dumps(summary), flush=True)
    if args.out:
        with args.out.open("a") as out:
            for line in [*results, summary]:
                out.write(json.dumps(line) + "\n")


if __name__ == "__main__":
    main()
