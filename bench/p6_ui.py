"""P6: the web UI's experiment page with 10,000 trials x 100 validation points each.

    .venv/bin/python bench/p6_ui.py [--backend sqlite|postgresql|both] [--trials 10000]
        [--points 100] [--loads 20] [--page visualization|overview] [--out FILE.jsonl]

For each database: a fresh one (SQLite file in a temporary directory, or a new PostgreSQL
database on 127.0.0.1:5432) is migrated and loaded with one COMPLETED experiment of
``--trials`` trials (random search hyperparameters: lr, units, dropout, optimizer, nested
layers.depth) of ``--points`` validation rows each (val_loss, val_accuracy on a noisy
learning curve; every trial's best_validation set as the master keeps it), by bulk inserts
through SQLAlchemy Core. A master (``python -m pedl.master``, which serves the built UI)
starts on it, then Debian's Chromium (headless, Playwright) opens the experiment's page
``--loads`` times, each in a fresh browser context (no HTTP cache), and the time from
navigation start to ``performance.mark("pedl:charts-painted")`` is read from the page
(``performance.getEntriesByName(...)[0].startTime``). One load before them warms the master
up and is reported apart. Also measured: each chart API call's time in the page (resource
timing) and, with httpx, the endpoints alone. Needs ``make ui`` and /usr/bin/chromium.
Prints one JSON line per database.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import random
import secrets
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
from p5_master import (
    CLOCK_TICKS,
    Backend,
    MasterProcess,
    child_pids,
    loadavg,
    make_backend,
    quantile,
)
from playwright.sync_api import Browser, sync_playwright
from sqlalchemy import insert, update

from pedl.config import parse_config
from pedl.engine import ExperimentState, MetricKind, TrialState
from pedl.master.api._session_cookie import CSRF_COOKIE, SESSION_COOKIE, csrf_token
from pedl.master.api._web_ui import UI_DIST
from pedl.master.db import Database, Experiment, Metric, Trial, TrialLog
from pedl.master.db import experiments as experiments_repo
from pedl.master.db.search_history import ATTEMPT_EXITED, ATTEMPT_STARTED, MASTER_STREAM

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-background-networking", "--disable-dev-shm-usage"]
MARK = "pedl:charts-painted"
BATCHES_PER_POINT = 100
CHUNK = 50_000

CONFIG = """\
name: p6-10k-trials
description: P6 - 10,000 trials of 100 validations each
labels: [bench, p6]
entrypoint: model_def:MyTrial
records_per_epoch: 6400
hyperparameters:
  global_batch_size: 64
  lr: {type: log, minval: -4, maxval: -1}
  units: {type: int, minval: 16, maxval: 512}
  dropout: {type: double, minval: 0.0, maxval: 0.5}
  optimizer: {type: categorical, vals: [adam, sgd, rmsprop]}
  layers:
    depth: {type: int, minval: 1, maxval: 6}
searcher:
  name: random
  metric: val_loss
  smaller_is_better: true
  max_trials: 10000
  max_length: {batches: 10000}
"""


def load(url: str, trials: int, points: int, seed: int = 0) -> tuple[int, float]:
    """Migrate the database at ``url`` and load the P6 experiment; its id and seconds taken."""
    started = time.perf_counter()
    database = Database(url)
    try:
        database.upgrade()
        rng = random.Random(seed)
        now = datetime.now(UTC)
        with database.session(write=True) as session:
            experiment = experiments_repo.create_experiment(
                session,
                config=_config_document(trials),
                config_text=CONFIG,
                model_definition=b"",
                owner="bench",
                name="p6-10k-trials",
                description="P6 - 10,000 trials of 100 validations each",
                labels=["bench", "p6"],
                searcher_metric="val_loss",
                smaller_is_better=True,
            )
            experiment_id = experiment.id
        trial_rows, metric_rows, log_rows = [], [], []
        for index in range(trials):
            trial_id = index + 1
            hparams = {
                "global_batch_size": 64,
                "lr": 10 ** rng.uniform(-4, -1),
                "units": rng.randint(16, 512),
                "dropout": rng.uniform(0.0, 0.5),
                "optimizer": rng.choice(["adam", "sgd", "rmsprop"]),
                "layers": {"depth": rng.randint(1, 6)},
            }
            floor, speed = rng.uniform(0.05, 0.6), rng.uniform(0.02, 0.2)
            best = math.inf
            for point in range(points):
                loss = floor + 2.0 * math.exp(-speed * point) + rng.gauss(0, 0.02)
                best = min(best, loss)
                metric_rows.append(
                    {
                        "trial_id": trial_id,
                        "kind": MetricKind.VALIDATION,
                        "total_batches": (point + 1) * BATCHES_PER_POINT,
                        "total_records": (point + 1) * BATCHES_PER_POINT * 64,
                        "total_epochs": (point + 1) * BATCHES_PER_POINT * 64 / 6400,
                        "metrics": {"val_loss": loss, "val_accuracy": 1.0 - loss / 3.0},
                        "reported_at": now + timedelta(seconds=index + point),
                    }
                )
            # The orchestrator's start and exit lines: the attempt the timeline draws (two
            # slots' worth: each trial runs 2 s, one starts every second).
            for seq, (message, at) in enumerate(
                [(ATTEMPT_STARTED, index), (ATTEMPT_EXITED + " (exit code 0)", index + 2)]
            ):
                log_rows.append(
                    {
                        "trial_id": trial_id,
                        "seq": seq,
                        "message": message,
                        "stream": MASTER_STREAM,
                        "timestamp": now + timedelta(seconds=at),
                    }
                )
            trial_rows.append(
                {
                    "id": trial_id,
                    "experiment_id": experiment_id,
                    "request_id": f"{trial_id:08x}",
                    "hparams": hparams,
                    "seed": rng.randrange(2**31),
                    "state": TrialState.COMPLETED,
                    "restarts": 0,
                    "total_batches": points * BATCHES_PER_POINT,
                    "best_validation": best if points else None,
                    "outcome": "COMPLETED",
                    "token_hash": secrets.token_hex(32),
                    "created_at": now,
                    "ended_at": now,
                }
            )
        with database.session(write=True) as session:
            session.execute(insert(Trial), trial_rows)
            for start in range(0, len(metric_rows), CHUNK):
                session.execute(insert(Metric.__table__), metric_rows[start : start + CHUNK])
            session.execute(insert(TrialLog.__table__), log_rows)
            session.execute(
                update(Experiment)
                .where(Experiment.id == experiment_id)
                .values(state=ExperimentState.COMPLETED, progress=1.0, ended_at=now)
            )
        if database.dialect == "postgresql":
            with database.engine.connect() as conn:
                conn.exec_driver_sql("ANALYZE")
                conn.commit()
    finally:
        database.dispose()
    return experiment_id, time.perf_counter() - started


def _config_document(trials: int) -> dict[str, Any]:
    return parse_config(CONFIG.replace("max_trials: 10000", f"max_trials: {trials}")).as_dict()


def descendants(pid: int) -> set[int]:
    """Every process below ``pid`` now (children, their children, ...)."""
    found: set[int] = set()
    todo = [pid]
    while todo:
        for child in child_pids(todo.pop()):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def tree_cpu(master_pid: int) -> tuple[float, float]:
    """CPU seconds so far of the master's processes, and of the others this script started
    (Playwright's driver and Chromium): user + system, with those of their children that have
    exited (Chromium's renderers come and go with each browser context)."""
    master = descendants(master_pid) | {master_pid}
    others = descendants(os.getpid()) - master
    return _cpu_with_children(master), _cpu_with_children(others)


def _cpu_with_children(pids: set[int]) -> float:
    total = 0
    for pid in pids:
        with contextlib.suppress(FileNotFoundError, ProcessLookupError):
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            total += sum(int(value) for value in fields[11:15])  # utime stime cutime cstime
    return total / CLOCK_TICKS


def _loaded_experiment(url: str) -> int:
    database = Database(url)
    try:
        with database.session() as session:
            rows, _ = experiments_repo.list_experiments(session, name="p6-10k-trials", limit=1)
    finally:
        database.dispose()
    if not rows:
        sys.exit(f"no P6 experiment in {url}")
    return rows[0].id


def page_load(browser: Browser, url: str, token: str) -> dict[str, Any]:
    """One load of ``url`` in a fresh context, signed in as a browser that signed in earlier is
    (the session's cookies): ms to the mark, and what the charts drew."""
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    context.add_cookies(
        [
            {"name": SESSION_COOKIE, "value": token, "url": url, "httpOnly": True},
            {"name": CSRF_COOKIE, "value": csrf_token(token), "url": url},
        ]
    )
    try:
        page = context.new_page()
        cdp = context.new_cdp_session(page)
        cdp.send("Performance.enable")
        page.goto(url)
        # Polled with evaluate (CDP), not wait_for_function: the master's Content-Security-Policy
        # forbids the eval that wait_for_function's predicate needs. The time is the mark's own.
        deadline = time.monotonic() + 60
        while not page.evaluate(f"performance.getEntriesByName('{MARK}').length > 0"):
            if time.monotonic() > deadline:
                raise TimeoutError(f"no {MARK} within 60 s")
            time.sleep(0.02)
        metrics = {m["name"]: m["value"] for m in cdp.send("Performance.getMetrics")["metrics"]}
        sample: dict[str, Any] = page.evaluate(
            """(mark) => {
                const api = {};
                for (const r of performance.getEntriesByType('resource')) {
                    const path = new URL(r.name).pathname.replace(/\\/\\d+/g, '/N');
                    if (path.startsWith('/api/')) api[path] = Math.round(r.duration);
                }
                const count = (id, attr) => {
                    const el = document.querySelector(`[data-testid=${id}]`);
                    return el ? Number(el.getAttribute(attr)) : null;
                };
                const calls = performance.getEntriesByType('resource')
                    .filter((r) => new URL(r.name).pathname.startsWith('/api/'));
                const nav = performance.getEntriesByType('navigation')[0];
                return {
                    ms: performance.getEntriesByName(mark)[0].startTime,
                    dcl_ms: nav.domContentLoadedEventEnd,
                    api_start_ms: Math.min(...calls.map((r) => r.startTime)),
                    api_done_ms: Math.max(0, ...calls.map((r) => r.responseEnd)),
                    series: count('learning-curves', 'data-series-count'),
                    trials: count('parallel-coordinates', 'data-trial-count'),
                    importance_trials: count('importance', 'data-trials'),
                    history: count('history', 'data-trial-count'),
                    attempts: count('timeline', 'data-attempt-count'),
                    api,
                };
            }""",
            MARK,
        )
        # The renderer's main thread until now: all tasks, of which JavaScript, layout, style.
        for name in ("TaskDuration", "ScriptDuration", "LayoutDuration", "RecalcStyleDuration"):
            sample[name] = round(metrics.get(name, 0.0) * 1000, 1)
        return sample
    finally:
        context.close()


def endpoint_times(
    base: str, experiment_id: int, token: str, repeats: int = 10
) -> dict[str, float]:
    """Median ms of each chart endpoint alone (httpx, keep-alive)."""
    paths = {
        "series": f"/experiments/{experiment_id}/series?metric=val_loss&kind=validation",
        "summary": f"/experiments/{experiment_id}/trials/summary",
        "importance": f"/experiments/{experiment_id}/importance",
        "history": f"/experiments/{experiment_id}/history",
        "timeline": f"/experiments/{experiment_id}/timeline",
        "series-all": f"/experiments/{experiment_id}/series?metric=val_loss&select=all",
        "metric-names": f"/experiments/{experiment_id}/metric-names",
        "trials-page": f"/experiments/{experiment_id}/trials?limit=100",
        "experiment": f"/experiments/{experiment_id}",
    }
    times: dict[str, float] = {}
    headers = {"Authorization": f"Bearer {token}"}
    with httpx.Client(base_url=base + "/api/v1", timeout=60, headers=headers) as http:
        for name, path in paths.items():
            samples = []
            for _ in range(repeats):
                started = time.perf_counter()
                response = http.get(path)
                samples.append((time.perf_counter() - started) * 1000)
                response.raise_for_status()
            times[name] = round(statistics.median(samples), 1)
    return times


def run(kind: str, args: argparse.Namespace) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="pedl-p6-") as tmp:
        home = Path(tmp)
        if args.db_url:  # loaded before (--keep): measure again
            backend = Backend(kind, args.db_url)
            experiment_id, load_s = _loaded_experiment(args.db_url), 0.0
        else:
            db_home = Path(tempfile.mkdtemp(prefix="pedl-p6-db-")) if args.keep else home
            backend = make_backend(kind, db_home)
            experiment_id, load_s = load(backend.url, args.trials, args.points)
            if args.keep:
                print(f"kept: --db-url {backend.url}", file=sys.stderr)
                backend = Backend(kind, backend.url)
        try:
            master = MasterProcess(home, backend.url).start()
            try:
                route = f"/experiments/{experiment_id}"
                if args.page == "visualization":
                    route += "/visualization"
                url = f"{master.url}/#{route}"
                token = master.sign_in()
                with sync_playwright() as playwright:
                    browser = playwright.chromium.launch(
                        executable_path=CHROMIUM,
                        headless=True,
                        args=CHROMIUM_ARGS + args.chromium_arg,
                    )
                    try:
                        warmup = page_load(browser, url, token)
                        cpu_before = tree_cpu(master.pid)
                        loads = [page_load(browser, url, token) for _ in range(args.loads)]
                        cpu_after = tree_cpu(master.pid)
                        master_cpu = cpu_after[0] - cpu_before[0]
                        browser_cpu = cpu_after[1] - cpu_before[1]
                    finally:
                        browser.close()
                endpoints = endpoint_times(master.url, experiment_id, token)
            finally:
                master.stop()
        finally:
            backend.drop()
    ms = sorted(sample["ms"] for sample in loads)
    api_calls: dict[str, list[int]] = {}
    for sample in loads:
        for path, duration in sample["api"].items():
            api_calls.setdefault(path, []).append(duration)
    return {
        "benchmark": "p6_ui",
        "backend": kind,
        "page": args.page,
        "chromium_args": CHROMIUM_ARGS + args.chromium_arg,
        "trials": args.trials,
        "points": args.points,
        "load_seconds": round(load_s, 1),
        "loads": len(ms),
        "p50_ms": round(quantile(ms, 0.5), 1),
        "p95_ms": round(quantile(ms, 0.95), 1),
        "max_ms": round(ms[-1], 1),
        "min_ms": round(ms[0], 1),
        "warmup_ms": round(warmup["ms"], 1),
        "series_drawn": sorted({sample["series"] for sample in loads}),
        "parallel_trials": sorted({sample["trials"] for sample in loads}),
        "median_ms": {
            name: round(statistics.median(x[name] for x in loads), 1)
            for name in (
                "dcl_ms",
                "api_start_ms",
                "api_done_ms",
                "ms",
                "TaskDuration",
                "ScriptDuration",
                "LayoutDuration",
                "RecalcStyleDuration",
            )
        },
        "master_cpu_ms_per_load": round(master_cpu * 1000 / len(loads), 1),
        "browser_cpu_ms_per_load": round(browser_cpu * 1000 / len(loads), 1),
        "api_median_ms_in_page": {p: statistics.median(d) for p, d in sorted(api_calls.items())},
        "endpoint_median_ms": endpoints,
        "loadavg": loadavg(),
        "samples_ms": [round(value, 1) for value in ms],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backend", choices=["sqlite", "postgresql", "both"], default="both")
    parser.add_argument("--trials", type=int, default=10_000)
    parser.add_argument("--points", type=int, default=100)
    parser.add_argument("--loads", type=int, default=20)
    parser.add_argument("--page", choices=["visualization", "overview"], default="visualization")
    parser.add_argument("--out", type=Path)
    parser.add_argument(
        "--keep", action="store_true", help="keep the loaded database (SQLite: in /tmp)"
    )
    parser.add_argument("--db-url", help="measure a database loaded before (with --backend)")
    parser.add_argument(
        "--chromium-arg", action="append", default=[], help="another Chromium flag (repeatable)"
    )
    args = parser.parse_args()
    if args.db_url and args.backend == "both":
        parser.error("--db-url needs --backend sqlite or postgresql")
    if not (UI_DIST / "index.html").is_file():
        sys.exit(f"the web UI is not built ({UI_DIST}): run `make ui`")
    kinds = ["sqlite", "postgresql"] if args.backend == "both" else [args.backend]
    for kind in kinds:
        result = run(kind, args)
        line = json.dumps(result)
        print(line, flush=True)
        if args.out is not None:
            with args.out.open("a") as out:
                out.write(line + "\n")


if __name__ == "__main__":
    main()
