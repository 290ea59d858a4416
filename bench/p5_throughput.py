"""P5(a): metric rows/s ingested through ``POST /trials/{id}/metrics`` into SQLite or PostgreSQL.

    .venv/bin/python bench/p5_throughput.py --backend sqlite|postgresql \\
        [--batch 1000] [--threads 4] [--requests 40] [--reps 3] [--max-reps N]
        [--rel-halfwidth 0.05] [--out FILE.jsonl]

A master runs as a separate process on loopback with a fresh database. Each of ``--threads``
client threads owns one trial and posts ``--requests`` bodies of ``--batch`` new training rows
(distinct ``total_batches``, two metrics each) back to back on its own keep-alive connection.
The bodies are serialised before the clock starts, as whole HTTP requests written on a socket
(``--client raw``, since 2026-12-04), so the load generator mostly waits on the socket; with
``--client httpx`` (before) the four clients took ~0.3 of the 2 vCPUs beside the master, and
``--also-httpx`` measures both in each repetition. rows/s = rows acknowledged / wall time
from the first send to the last answer. One warm-up round (5 bodies a thread) is not counted.
Each repetition prints one JSON line; the last line is the summary (median and range over
repetitions; with ``--max-reps``, repetitions go on past ``--reps`` until the 95% intervals of
the medians of the master's rows/s and of master ÷ DB layer (text) are within
``--rel-halfwidth`` of them (``_env.repeat_until_narrow``; 95% needs 6 repetitions): the
summary's ``repeated`` gives the intervals and whether they got that narrow). Every run checks
that the database holds exactly the rows that were acknowledged.

Beside each repetition, in the same run and on the same database (the master idle), the
master's own database layer alone: one thread calls ``pedl.db.metrics.upsert_metrics`` with
the same bodies already parsed into rows (``--threads`` times ``--requests`` bodies, one
transaction each, on the trials' next batches), rows/s over its wall time (``db_rows_per_s``).
Also the form the master's writer takes for these bodies (since 2026-11-30, ``report_text``:
the database reads the rows from the body's text; on PostgreSQL from 100 rows a body):
``report_text`` then ``upsert_reports``, one transaction per body, its text a plain insert
as the writer's first try makes it since 2026-12-03 (``fresh``) (``db_text_rows_per_s``,
ratio ``master_over_db_text``). The summary gives the ratio master ÷ database layer (issue 38's
goal: ≥ 0.9, both ≥ 100,000 rows/s), and, since wall time on a shared machine mostly
measures the other load, the same per CPU second (``rows_per_cpu_s``: the master's process
and its read processes, which check big reports since 2026-12-01 (``read_processes_cpu_cores``),
or this one's for the database layer, plus every PostgreSQL process's CPU; with PostgreSQL,
other users of the server are counted too).
"""

from __future__ import annotations

import argparse
import json
import socket
import statistics
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import _env
import httpx
import p5_master

from pedl.db import Database
from pedl.db import metrics as metrics_repo
from pedl.master.api._schemas import MetricsBatch
from pedl.master.api.trials import fast_metric_rows, metric_rows


def raw_requests(url: str, trial_id: int, token: str, bodies: list[bytes]) -> list[bytes]:
    """The bodies as whole HTTP/1.1 requests, for :func:`post_all_raw` (made before the clock)."""
    host = url.removeprefix("http://")
    path = f"/api/v1/trials/{trial_id}/metrics"
    return [
        (
            f"POST {path} HTTP/1.1\r\nHost: {host}\r\n"
            f"Authorization: Bearer {token}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n\r\n"
        ).encode()
        + body
        for body in bodies
    ]


def post_all_raw(url: str, requests: list[bytes], errors: list[str]) -> None:
    """The requests written on one keep-alive socket, each answer read before the next: the
    client spends ~0.03 of a core where httpx's spent ~0.3 (2026-12-04: master 0.85, its read
    process 0.4, the four httpx clients 0.3 of the 2 vCPUs), CPU the master's processes
    could not have on the machine beside it."""
    host, port = url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=120) as sock:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        reader = sock.makefile("rb")
        for request in requests:
            sock.sendall(request)
            status = reader.readline().split(b" ", 2)
            length = 0
            while (line := reader.readline()) not in (b"\r\n", b""):
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value)
            answer = reader.read(length)
            if len(status) < 2 or status[1] != b"200":
                errors.append(f"{b' '.join(status[1:]).decode().strip()} {answer[:200]!r}")
                return


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
    client: str = "raw",
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
        threading.Thread(
            target=post_all_raw,
            args=(master.url, raw_requests(master.url, tid, tok, bodies[tid]), errors),
        )
        if client == "raw"
        else threading.Thread(target=post_all, args=(master.url, tid, tok, bodies[tid], errors))
        for tid, tok in trials
    ]
    cpu_before = p5_master.cpu_seconds(master.pid)
    children = p5_master.child_pids(master.pid)  # its read processes
    children_before = p5_master.cpu_seconds_of(children)
    pg_before = p5_master.postgres_cpu_seconds()
    client_before = time.process_time()
    load = _env.load_average()[0]
    start = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    wall = time.perf_counter() - start
    master_cpu = p5_master.cpu_seconds(master.pid) - cpu_before
    children_cpu = p5_master.cpu_seconds_of(children) - children_before
    postgres_cpu = p5_master.postgres_cpu_seconds() - pg_before
    if errors:
        raise RuntimeError(f"{len(errors)} failed requests, first: {errors[0]}")
    rows = batch * requests * len(trials)
    return {
        "rows": rows,
        "wall_s": round(wall, 3),
        "rows_per_s": round(rows / wall),
        "master_cpu_cores": round(master_cpu / wall, 2),
        "rows_per_master_cpu_s": round(rows / master_cpu),
        "read_processes_cpu_cores": round(children_cpu / wall, 2),
        "postgres_cpu_cores": round(postgres_cpu / wall, 2),
        "rows_per_cpu_s": round(rows / (master_cpu + children_cpu + postgres_cpu)),
        "client_cpu_cores": round((time.process_time() - client_before) / wall, 2),
        "loadavg_1m_before": load,
    }


def run_db_layer(
    database: Database,
    trials: list[tuple[int, str]],
    batch: int,
    requests: int,
    first_batch: int,
    *,
    text: bool = False,
) -> dict[str, Any]:
    """The database layer alone, in this process's one thread: each trial's ``requests``
    bodies of ``batch`` rows (as the master parses them, before the clock) through
    ``upsert_metrics``, one transaction per body, the trials taking turns. ``text``: as the
    master's writer stores them instead, from the body's text
    (``report_text``, timed, then ``upsert_reports`` with ``fresh``, its first try)."""
    bodies: list[tuple[int, bytes, list[Any]]] = []
    for r in range(requests):
        for trial_id, _ in trials:
            body = p5_master.rows_body(first_batch + r * batch, batch, seed=trial_id)
            if text:
                fast = fast_metric_rows(body)
                assert fast is not None
                bodies.append((trial_id, body, fast))
            else:
                parsed = metric_rows(MetricsBatch.model_validate_json(body))
                bodies.append((trial_id, body, parsed))
    load = _env.load_average()[0]
    pg_before = p5_master.postgres_cpu_seconds()
    cpu_before = time.process_time()
    start = time.perf_counter()
    for trial_id, body, rows in bodies:
        report = metrics_repo.report_text(body, rows, database.dialect) if text else None
        assert report is not None or not text, "the benchmark's bodies are stored from their text"
        with database.session(write=True, serialize=True) as session:
            if report is not None:
                metrics_repo.upsert_reports(session, [(trial_id, report)], fresh=True)
            else:
                metrics_repo.upsert_metrics(session, trial_id, rows)
    wall = time.perf_counter() - start
    cpu = time.process_time() - cpu_before + p5_master.postgres_cpu_seconds() - pg_before
    rows_written = batch * len(bodies)
    return {
        "rows": rows_written,
        "rows_per_s": round(rows_written / wall),
        "rows_per_cpu_s": round(rows_written / cpu),
        "loadavg_1m_before": load,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--backend", choices=["sqlite", "postgresql"], required=True)
    parser.add_argument("--batch", type=int, default=1000, help="rows per request")
    parser.add_argument("--threads", type=int, default=4, help="client threads (one trial each)")
    parser.add_argument("--requests", type=int, default=40, help="requests per thread per round")
    parser.add_argument("--reps", type=int, default=3, help="repetitions (at least)")
    parser.add_argument(
        "--max-reps",
        type=int,
        help="repeat beyond --reps, up to this many, until the 95%% intervals of the master's "
        "rows/s and of master ÷ DB layer (text) are within --rel-halfwidth of their medians",
    )
    parser.add_argument("--rel-halfwidth", type=float, default=0.05)
    parser.add_argument(
        "--client",
        choices=["raw", "httpx"],
        default="raw",
        help="the load generator: whole requests written beforehand on a socket (since "
        "2026-12-04), or httpx (before)",
    )
    parser.add_argument(
        "--also-httpx",
        action="store_true",
        help="each repetition also posts as many bodies through httpx, before or after the "
        "--client round in turn (httpx_rows_per_s, httpx_over_db_text)",
    )
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()

    results: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="pedl-p5-") as tmp:
        home = Path(tmp)
        backend = p5_master.make_backend(args.backend, home)
        master = p5_master.MasterProcess(home, backend.url, spare_workers=0)
        try:
            master.start()
            trials = p5_master.make_trials(master, args.threads)
            next_batch = 0
            run_round(master, trials, args.batch, 5, next_batch)  # warm-up
            next_batch += 5 * args.batch
            acknowledged = 5 * args.batch * args.threads
            database = Database(backend.url)

            def httpx_round() -> dict[str, Any]:
                nonlocal next_batch, acknowledged
                other = run_round(
                    master, trials, args.batch, args.requests, next_batch, client="httpx"
                )
                next_batch += args.requests * args.batch
                acknowledged += other["rows"]
                return other

            def measure(rep: int) -> dict[str, float]:
                nonlocal next_batch, acknowledged
                other = httpx_round() if args.also_httpx and rep % 2 == 1 else None
                result = run_round(
                    master, trials, args.batch, args.requests, next_batch, client=args.client
                )
                next_batch += args.requests * args.batch
                acknowledged += result["rows"]
                if args.also_httpx and other is None:
                    other = httpx_round()
                db = run_db_layer(database, trials, args.batch, args.requests, next_batch)
                next_batch += args.requests * args.batch
                acknowledged += db["rows"]
                db_text = run_db_layer(
                    database, trials, args.batch, args.requests, next_batch, text=True
                )
                next_batch += args.requests * args.batch
                acknowledged += db_text["rows"]
                result.update(
                    client=args.client,
                    db_text_rows_per_s=db_text["rows_per_s"],
                    master_over_db_text=round(result["rows_per_s"] / db_text["rows_per_s"], 3),
                )
                if other is not None:
                    result.update(
                        httpx_rows_per_s=other["rows_per_s"],
                        httpx_client_cpu_cores=other["client_cpu_cores"],
                        httpx_over_db_text=round(other["rows_per_s"] / db_text["rows_per_s"], 3),
                    )
                result.update(
                    rep=rep,
                    backend=args.backend,
                    batch=args.batch,
                    threads=args.threads,
                    db_rows_per_s=db["rows_per_s"],
                    db_loadavg_1m_before=db["loadavg_1m_before"],
                    master_over_db=round(result["rows_per_s"] / db["rows_per_s"], 3),
                    db_rows_per_cpu_s=db["rows_per_cpu_s"],
                    master_over_db_per_cpu=round(
                        result["rows_per_cpu_s"] / db["rows_per_cpu_s"], 3
                    ),
                )
                print(json.dumps(result), flush=True)
                results.append(result)
                return {
                    "rows_per_s": result["rows_per_s"],
                    "master_over_db_text": result["master_over_db_text"],
                }

            repeated = _env.repeat_until_narrow(
                measure,
                min_reps=args.reps,
                max_reps=max(args.reps, args.max_reps or args.reps),
                rel_halfwidth=args.rel_halfwidth,
            )
            database.dispose()
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
        "db_rows_per_s_median": statistics.median(r["db_rows_per_s"] for r in results),
        "master_over_db_median": statistics.median(r["master_over_db"] for r in results),
        "master_over_db_min": min(r["master_over_db"] for r in results),
        "db_text_rows_per_s_median": statistics.median(r["db_text_rows_per_s"] for r in results),
        "master_over_db_text_median": statistics.median(r["master_over_db_text"] for r in results),
        "rows_per_cpu_s_median": statistics.median(r["rows_per_cpu_s"] for r in results),
        "db_rows_per_cpu_s_median": statistics.median(r["db_rows_per_cpu_s"] for r in results),
        "master_over_db_per_cpu_median": statistics.median(
            r["master_over_db_per_cpu"] for r in results
        ),
        "client": args.client,
        **(
            {
                "httpx_rows_per_s_median": statistics.median(
                    r["httpx_rows_per_s"] for r in results
                ),
                "httpx_over_db_text_median": statistics.median(
                    r["httpx_over_db_text"] for r in results
                ),
            }
            if args.also_httpx
            else {}
        ),
        "loadavg_1m_min": min(r["loadavg_1m_before"] for r in results),
        "loadavg_1m_max": max(r["loadavg_1m_before"] for r in results),
        "master_cpu_cores_median": statistics.median(r["master_cpu_cores"] for r in results),
        "read_processes_cpu_cores_median": statistics.median(
            r["read_processes_cpu_cores"] for r in results
        ),
        "rows_per_master_cpu_s_median": statistics.median(
            r["rows_per_master_cpu_s"] for r in results
        ),
        "stored_rows_checked": stored,
        "repeated": repeated.as_dict(),
        "machine": _env.machine(),
    }
    print(json.dumps(summary), flush=True)
    if args.out:
        with args.out.open("a") as out:
            for line in [*results, summary]:
                out.write(json.dumps(line) + "\n")


if __name__ == "__main__":
    main()
