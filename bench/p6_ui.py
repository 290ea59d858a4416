"""P6: the web UI's experiment page with 10,000 (or 100,000) trials x 100 validation points
each, beside optuna-dashboard on the same data.

    .venv/bin/python bench/p6_ui.py [--backend sqlite|postgresql|both] [--trials 10000]
        [--points 100] [--loads 20] [--page visualization|overview] [--out FILE.jsonl]
        [--optuna] [--optuna-loads 3] [--optuna-cap 120]

For each database: a fresh one (SQLite file in a temporary directory, or a new PostgreSQL
database on 127.0.0.1:5432) is migrated and loaded with one COMPLETED experiment of
``--trials`` trials (random search hyperparameters: lr, units, dropout, optimizer, nested
layers.depth) of ``--points`` validation rows each (val_loss, val_accuracy on a noisy
learning curve; every trial's best_validation set as the master keeps it), by bulk inserts
in chunks of 1,000 trials (SQLAlchemy Core; PostgreSQL's metric rows by ``COPY``), so that
10 million rows load without holding them in memory. A master (``python -m pedl.master``,
which serves the built UI) starts on it, then Debian's Chromium (headless, Playwright) opens
the experiment's page ``--loads`` times, each in a fresh browser context (no HTTP cache),
and the time from navigation start to ``performance.mark("pedl:charts-painted")`` is read
from the page (``performance.getEntriesByName(...)[0].startTime``): on the visualization tab
the frame after every chart drew, on the overview tab the frame after its first chart (the
learning curves) drew with data. One load before them warms the master up and is reported
apart. Also measured: each chart API call's time in the page (resource timing), with httpx
the endpoints alone, and the master's resident memory (the master and every process below
it, summed, sampled every 0.1 s) at its peak during the loads and during the endpoint
calls (which ask every chart's data, the visualization tab's included, whatever ``--page``).
The master runs no trial here and starts no spare warm workers (from 2026-12-02; before, its
default spares and their worker template, once started, counted in its memory: 1,381 against
483 MB at 10,000 trials on 2026-12-02, and imported TensorFlow beside the first loads).
Chromium runs without its address-bar popup's WebUI (``OMNIBOX_POPUP_FEATURES``): each fresh
context's window started a renderer for it that competed with the page for the CPUs (the
figures before 2026-11-30 08:00 UTC include it). Needs ``make ui`` and /usr/bin/chromium.
Prints one JSON line per database, with the load average before the first page load and after
the last, and the machine (``bench/_env.py``).

``--optuna`` also loads the same trials (the same random numbers: hyperparameters, each
trial's val_loss at each batch count as its intermediate values, its best val_loss as its
value) into an Optuna RDB storage (a SQLite file in the temporary directory; the study is
made with ``optuna.create_study``, its trial rows are bulk-inserted into Optuna's own tables,
because ``study.add_trials`` took 307 s for 1,000 trials of 100 intermediate values on this
machine; a sample of trials is read back with Optuna's API and compared), starts
``optuna-dashboard`` on loopback and times, in the same Chromium, its study page's first
chart with data: navigation start to the frame after the first Plotly trace mark
(``.js-plotly-plot .scatterlayer .trace path.point`` or ``path.js-line``: Plotly adds a
trace's markers and lines only once it has points to draw) exists, seen by a
MutationObserver the test injects before the page's scripts. ``--optuna-cap`` seconds at most
per load (reported as ``null`` and ``capped``); after a capped load no more are tried. The
data is loaded once per run (it does not depend on ``--backend``) and its line is printed
with the first database's. optuna-dashboard is not a PEDL dependency; for the benchmark only:

    .venv/bin/python -m pip install optuna-dashboard==0.21.0
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import math
import os
import random
import resource
import secrets
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, cast

import _env
import httpx
from p5_master import (
    CLOCK_TICKS,
    Backend,
    MasterProcess,
    child_pids,
    free_port,
    make_backend,
    quantile,
)
from playwright.sync_api import Browser, sync_playwright
from sqlalchemy import Table, insert, update

from pedl.config import parse_config
from pedl.db import Database, Experiment, Metric, Trial, TrialLog
from pedl.db import experiments as experiments_repo
from pedl.db.search_history import ATTEMPT_EXITED, ATTEMPT_STARTED, MASTER_STREAM
from pedl.master.api._session_cookie import CSRF_COOKIE, SESSION_COOKIE, csrf_token
from pedl.master.api._web_ui import UI_DIST
from pedl.vocabulary import ExperimentState, MetricKind, TrialState

CHROMIUM = "/usr/bin/chromium"
OMNIBOX_POPUP_FEATURES = "WebUIOmniboxPopup,WebUIOmniboxFullPopup,WebUIOmniboxAimPopup"
"""Chromium's address-bar popup drawn as a page (WebUI): every fresh context's window starts a
renderer for it (chrome://omnibox-popup.top-chrome), ~270 ms of CPU beside the measured page on
this 2-vCPU machine, where a user's browser started it once, with its first window."""
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-background-networking",
    "--disable-dev-shm-usage",
    f"--disable-features={OMNIBOX_POPUP_FEATURES}",
]
MARK = "pedl:charts-painted"
BATCHES_PER_POINT = 100
TRIALS_PER_CHUNK = 1_000
OPTUNA_DASHBOARD = Path(sys.executable).with_name("optuna-dashboard")
OPTUNA_DRAWN = (
    ".js-plotly-plot .scatterlayer .trace path.point, "
    ".js-plotly-plot .scatterlayer .trace path.js-line"
)
"""A Plotly trace's markers or line: Plotly adds them only for a trace with points to draw."""
OPTUNA_OBSERVER = """
(() => {
  const selector = SELECTOR;
  const seen = () => {
    const el = document.querySelector(selector);
    if (!el || window.__p6drawn !== undefined) return false;
    window.__p6drawn = null;
    const chart = el.closest('[id]');
    requestAnimationFrame(() => {
      window.__p6drawn = performance.now();
      window.__p6chart = chart ? chart.id : null;
    });
    return true;
  };
  new MutationObserver((_, observer) => { if (seen()) observer.disconnect(); })
    .observe(document, { childList: true, subtree: true });
})();
""".replace("SELECTOR", json.dumps(OPTUNA_DRAWN))

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


@dataclass
class TrialData:
    """One generated trial: what both PEDL's and Optuna's storage get."""

    number: int
    """From 0; PEDL's trial id is ``number + 1``."""
    hparams: dict[str, Any]
    losses: list[float]
    """val_loss at batches 100, 200, ..."""
    seed: int

    @property
    def best(self) -> float | None:
        return min(self.losses) if self.losses else None


def generate(trials: int, points: int, seed: int = 0) -> Iterator[TrialData]:
    """The P6 trials, the same for the same arguments."""
    rng = random.Random(seed)
    for index in range(trials):
        hparams = {
            "global_batch_size": 64,
            "lr": 10 ** rng.uniform(-4, -1),
            "units": rng.randint(16, 512),
            "dropout": rng.uniform(0.0, 0.5),
            "optimizer": rng.choice(["adam", "sgd", "rmsprop"]),
            "layers": {"depth": rng.randint(1, 6)},
        }
        floor, speed = rng.uniform(0.05, 0.6), rng.uniform(0.02, 0.2)
        losses = [
            floor + 2.0 * math.exp(-speed * point) + rng.gauss(0, 0.02) for point in range(points)
        ]
        yield TrialData(index, hparams, losses, rng.randrange(2**31))


def _chunks(trials: int, points: int, seed: int) -> Iterator[list[TrialData]]:
    chunk: list[TrialData] = []
    for trial in generate(trials, points, seed):
        chunk.append(trial)
        if len(chunk) == TRIALS_PER_CHUNK:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def load(url: str, trials: int, points: int, seed: int = 0) -> tuple[int, float]:
    """Migrate the database at ``url`` and load the P6 experiment; its id and seconds taken."""
    started = time.perf_counter()
    database = Database(url)
    try:
        database.upgrade()
        now = datetime.now(UTC)
        with database.session(write=True) as session:
            experiment = experiments_repo.create_experiment(
                session,
                config=_config_document(trials),
                config_text=CONFIG,
                model_definition=b"",
                owner="bench",
                name="p6-10k-trials",
                description=f"P6 - {trials:,} trials of {points} validations each",
                labels=["bench", "p6"],
                searcher_metric="val_loss",
                smaller_is_better=True,
            )
            experiment_id = experiment.id
        for chunk in _chunks(trials, points, seed):
            trial_rows, metric_rows, log_rows = [], [], []
            for data in chunk:
                index, trial_id = data.number, data.number + 1
                for point, loss in enumerate(data.losses):
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
                        "hparams": data.hparams,
                        "seed": data.seed,
                        "state": TrialState.COMPLETED,
                        "restarts": 0,
                        "total_batches": points * BATCHES_PER_POINT,
                        "best_validation": data.best,
                        "outcome": "COMPLETED",
                        "token_hash": secrets.token_hex(32),
                        "created_at": now,
                        "ended_at": now,
                    }
                )
            with database.session(write=True) as session:
                session.execute(insert(Trial), trial_rows)
                if database.dialect == "postgresql":
                    _copy_metrics(session, metric_rows)
                else:
                    session.execute(insert(cast(Table, Metric.__table__)), metric_rows)
                session.execute(insert(cast(Table, TrialLog.__table__)), log_rows)
        with database.session(write=True) as session:
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


def _copy_metrics(session: Any, rows: list[dict[str, Any]]) -> None:
    """PostgreSQL: the metric rows by ``COPY`` on the session's own connection (its
    transaction), ten times faster than inserts."""
    columns = ("trial_id", "kind", "total_batches", "total_records", "total_epochs")
    connection = session.connection().connection.driver_connection
    with connection.cursor() as cursor:
        statement = f"COPY metrics ({', '.join(columns)}, metrics, reported_at) FROM STDIN"
        with cursor.copy(statement) as copy:
            for row in rows:
                copy.write_row(
                    (
                        row["trial_id"],
                        row["kind"].value,
                        row["total_batches"],
                        row["total_records"],
                        row["total_epochs"],
                        json.dumps(row["metrics"]),
                        row["reported_at"],
                    )
                )


def _config_document(trials: int) -> dict[str, Any]:
    return parse_config(CONFIG.replace("max_trials: 10000", f"max_trials: {trials}")).as_dict()


def load_optuna(path: Path, trials: int, points: int, seed: int = 0) -> tuple[str, float]:
    """The same trials in an Optuna storage (a SQLite file at ``path``): the study made by
    Optuna, its trials' rows inserted into Optuna's tables in bulk, a sample read back with
    Optuna's API and compared. The storage URL and the seconds taken."""
    import optuna
    from optuna.distributions import (
        CategoricalDistribution,
        FloatDistribution,
        IntDistribution,
        distribution_to_json,
    )

    started = time.perf_counter()
    url = f"sqlite:///{path}"
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    study = optuna.create_study(storage=url, study_name="p6", direction="minimize")
    study_id = study._study_id
    distributions = {
        "lr": FloatDistribution(1e-4, 1e-1, log=True),
        "units": IntDistribution(16, 512),
        "dropout": FloatDistribution(0.0, 0.5),
        "optimizer": CategoricalDistribution(["adam", "sgd", "rmsprop"]),
        "layers.depth": IntDistribution(1, 6),
    }  # global_batch_size, the same for every trial, is no search parameter
    as_json = {name: distribution_to_json(d) for name, d in distributions.items()}
    base = datetime.now(UTC).replace(tzinfo=None)
    sample: dict[int, TrialData] = {}
    with contextlib.closing(sqlite3.connect(path)) as db:
        for chunk in _chunks(trials, points, seed):
            trial_rows: list[tuple[Any, ...]] = []
            param_rows: list[tuple[Any, ...]] = []
            value_rows: list[tuple[Any, ...]] = []
            step_rows: list[tuple[Any, ...]] = []
            for data in chunk:
                trial_id = data.number + 1
                moment = str(base + timedelta(seconds=data.number))
                trial_rows.append((trial_id, data.number, study_id, "COMPLETE", moment, moment))
                flat = {**data.hparams, "layers.depth": data.hparams["layers"]["depth"]}
                for name, distribution in distributions.items():
                    internal = distribution.to_internal_repr(flat[name])
                    param_rows.append((trial_id, name, internal, as_json[name]))
                if data.best is not None:
                    value_rows.append((trial_id, 0, data.best, "FINITE"))
                step_rows.extend(
                    (trial_id, (point + 1) * BATCHES_PER_POINT, loss, "FINITE")
                    for point, loss in enumerate(data.losses)
                )
                if data.number in (0, trials // 2, trials - 1):
                    sample[data.number] = data
            db.executemany(
                "INSERT INTO trials (trial_id, number, study_id, state, datetime_start,"
                " datetime_complete) VALUES (?, ?, ?, ?, ?, ?)",
                trial_rows,
            )
            db.executemany(
                "INSERT INTO trial_params (trial_id, param_name, param_value, distribution_json)"
                " VALUES (?, ?, ?, ?)",
                param_rows,
            )
            db.executemany(
                "INSERT INTO trial_values (trial_id, objective, value, value_type)"
                " VALUES (?, ?, ?, ?)",
                value_rows,
            )
            db.executemany(
                "INSERT INTO trial_intermediate_values (trial_id, step, intermediate_value,"
                " intermediate_value_type) VALUES (?, ?, ?, ?)",
                step_rows,
            )
            db.commit()
    with contextlib.closing(sqlite3.connect(path)) as db:
        # Not storage.get_n_trials: it reads every trial (100,000 trials: 4 GB).
        count = "SELECT count(*) FROM trials WHERE study_id = ?"
        loaded = db.execute(count, (study_id,)).fetchone()[0]
    storage = optuna.storages.RDBStorage(url)
    try:
        if loaded != trials:
            raise RuntimeError(f"Optuna reads {loaded} trials, {trials} were loaded")
        for number, data in sample.items():
            trial = storage.get_trial(
                storage.get_trial_id_from_study_id_trial_number(study_id, number)
            )
            expected = {**data.hparams, "layers.depth": data.hparams["layers"]["depth"]}
            del expected["layers"], expected["global_batch_size"]
            steps = {(p + 1) * BATCHES_PER_POINT: v for p, v in enumerate(data.losses)}
            if (
                trial.params != expected
                or trial.value != data.best
                or trial.intermediate_values != steps
                or trial.state != optuna.trial.TrialState.COMPLETE
            ):
                raise RuntimeError(f"Optuna reads trial {number} otherwise than it was loaded")
    finally:
        storage.remove_session()
    return url, time.perf_counter() - started


class OptunaDashboard:
    """``optuna-dashboard <storage>`` on a free loopback port."""

    def __init__(self, storage: str, home: Path, memory_gb: float) -> None:
        if not OPTUNA_DASHBOARD.is_file():
            sys.exit(
                f"no {OPTUNA_DASHBOARD}: .venv/bin/python -m pip install optuna-dashboard==0.21.0"
            )
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = home / "optuna-dashboard.log"
        limit = int(memory_gb * 2**30)

        def limit_memory() -> None:  # a MemoryError in the dashboard, not a machine out of it
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

        with self.log_path.open("ab") as log:
            self.proc = subprocess.Popen(
                [str(OPTUNA_DASHBOARD), storage, "--host", "127.0.0.1", "--port", str(self.port)],
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                preexec_fn=limit_memory,
            )
        deadline = time.monotonic() + 60
        with httpx.Client(base_url=self.url, timeout=5) as http:
            while time.monotonic() < deadline:
                if self.proc.poll() is not None:
                    raise RuntimeError(f"optuna-dashboard exited:\n{self.log_path.read_text()}")
                with contextlib.suppress(httpx.TransportError):
                    if http.get("/api/meta").status_code == 200:
                        return
                time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"optuna-dashboard did not start:\n{self.log_path.read_text()}")

    def log_tail(self) -> str:
        """The last lines of its output (a MemoryError, if it ran out)."""
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-5:])

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def optuna_load(browser: Browser, url: str, cap_s: float) -> dict[str, Any]:
    """One load of optuna-dashboard's study page in a fresh context: ms from navigation start
    to the frame after its first Plotly trace mark (``None`` past ``cap_s``), and which chart."""
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    context.add_init_script(OPTUNA_OBSERVER)
    try:
        page = context.new_page()
        started = time.monotonic()
        page.goto(url)
        while time.monotonic() - started < cap_s:
            drawn = page.evaluate("[window.__p6drawn, window.__p6chart || null]")
            if isinstance(drawn[0], int | float):
                return {"ms": drawn[0], "chart": drawn[1]}
            time.sleep(0.05)
        return {"ms": None, "chart": None}
    finally:
        context.close()


def optuna_run(args: argparse.Namespace) -> dict[str, Any]:
    """The same data in optuna-dashboard: its study page's first chart, ``--optuna-loads``
    times (after one warm-up load) at most, stopping at the first past ``--optuna-cap``."""
    with tempfile.TemporaryDirectory(prefix="pedl-p6-optuna-") as tmp:
        home = Path(tmp)
        if args.optuna_db:  # loaded before (--keep)
            storage, load_s = f"sqlite:///{args.optuna_db}", 0.0
        else:
            db_home = Path(tempfile.mkdtemp(prefix="pedl-p6-optuna-db-")) if args.keep else home
            storage, load_s = load_optuna(db_home / "optuna.db", args.trials, args.points)
            if args.keep:
                print(f"kept: --optuna-db {db_home / 'optuna.db'}", file=sys.stderr)
            if args.load_only:
                return {
                    "benchmark": "p6_optuna_load",
                    "trials": args.trials,
                    "load_seconds": load_s,
                }
        dashboard = OptunaDashboard(storage, home, args.optuna_memory_gb)
        memory = MemoryPeak(dashboard.proc.pid)
        samples: list[dict[str, Any]] = []
        system_load = _env.Load.start()  # again at the first page load
        try:
            url = f"{dashboard.url}/dashboard/studies/1"
            with sync_playwright() as playwright, memory:
                browser = playwright.chromium.launch(
                    executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS
                )
                try:
                    system_load = _env.Load.start()
                    warmup = optuna_load(browser, url, args.optuna_cap)
                    if warmup["ms"] is not None:
                        for _ in range(args.optuna_loads):
                            samples.append(optuna_load(browser, url, args.optuna_cap))
                            if samples[-1]["ms"] is None:
                                break
                    system_load.stop()
                finally:
                    browser.close()
        finally:
            dashboard.stop()
            log_tail = dashboard.log_tail()
    drawn = sorted(s["ms"] for s in samples if s["ms"] is not None)
    capped = warmup["ms"] is None or len(drawn) < len(samples)
    return {
        "benchmark": "p6_optuna_dashboard",
        "optuna_dashboard": "0.21.0",
        "selector": OPTUNA_DRAWN,
        "trials": args.trials,
        "points": args.points,
        "load_seconds": round(load_s, 1),
        "cap_s": args.optuna_cap,
        "warmup_ms": None if warmup["ms"] is None else round(warmup["ms"], 1),
        "loads": len(samples),
        "capped": capped,
        "p50_ms": round(quantile(drawn, 0.5), 1) if drawn and not capped else None,
        "p95_ms": round(quantile(drawn, 0.95), 1) if drawn and not capped else None,
        "samples_ms": [None if s["ms"] is None else round(s["ms"], 1) for s in samples],
        "first_chart": sorted({s["chart"] for s in [*samples, warmup] if s["chart"]}),
        "dashboard_rss_peak_mb": memory.peak_mb,
        "dashboard_memory_limit_gb": args.optuna_memory_gb,
        "dashboard_log_tail": log_tail,
        **system_load.as_dict(),
        "machine": _env.machine(),
    }


PAGE_SIZE = os.sysconf("SC_PAGE_SIZE")
"""Bytes in a page of memory (``/proc/PID/statm`` counts pages)."""


class MemoryPeak:
    """The largest resident memory (MB) of a process and every process below it, summed,
    sampled every 0.1 s while in the ``with`` block."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.peak_mb = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def __enter__(self) -> MemoryPeak:
        self._stop.clear()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def now_mb(self) -> float:
        # The tree from each process's own list of children, not psutil's, which reads every
        # process on the machine at each call (4% of a core here, sampled every 0.1 s beside
        # the page being measured).
        total = 0
        for pid in [self.pid, *descendants(self.pid)]:
            with contextlib.suppress(FileNotFoundError, ProcessLookupError):
                total += int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * PAGE_SIZE
        return round(total / 2**20, 1)

    def _sample(self) -> None:
        while True:
            self.peak_mb = max(self.peak_mb, self.now_mb())
            if self._stop.wait(0.1):
                return


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


def renderer_pids() -> set[int]:
    """Chromium's renderer processes below this script now."""
    found: set[int] = set()
    for pid in descendants(os.getpid()):
        with contextlib.suppress(FileNotFoundError, ProcessLookupError):
            if b"--type=renderer" in Path(f"/proc/{pid}/cmdline").read_bytes():
                found.add(pid)
    return found


SCHEDSTAT = ("main_cpu_ms", "main_runqueue_ms")
"""What Linux's scheduler says of the page's renderer main thread since its process started
(``/proc/PID/task/PID/schedstat``), in ms: its time on a CPU, and its time runnable but
waiting for one (the other threads' and processes' share of the CPUs while it had work)."""


def main_thread_schedstat(pids: set[int]) -> dict[str, float | None]:
    """:data:`SCHEDSTAT` of the main thread of the renderer among ``pids`` (those a browser
    context started) that has run longest, the page's; ``None`` where there is none."""
    best: tuple[int, int] | None = None
    for pid in pids:
        with contextlib.suppress(FileNotFoundError, ProcessLookupError):
            on_cpu, waiting = Path(f"/proc/{pid}/task/{pid}/schedstat").read_text().split()[:2]
            if best is None or int(on_cpu) > best[0]:
                best = (int(on_cpu), int(waiting))
    if best is None:
        return dict.fromkeys(SCHEDSTAT)
    return {name: round(ns / 1e6, 1) for name, ns in zip(SCHEDSTAT, best, strict=True)}


def median_of_known(values: list[float | None]) -> float | None:
    """The median of the values that are known, ``None`` if none is."""
    known = [v for v in values if v is not None]
    return round(statistics.median(known), 1) if known else None


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


SETTLED = """async () => {
    // The work the page put off until the browser is idle (the charts' screen-reader tables)
    // done, and the frame after it drawn.
    const idle = () => new Promise((done) => requestIdleCallback(() => done(), { timeout: 5000 }));
    await idle();
    await new Promise((done) => requestAnimationFrame(() => setTimeout(done, 0)));
    await idle();
}"""


AT_MARK = """([mark, timeoutMs]) => new Promise((resolve, reject) => {
    if (performance.getEntriesByName(mark).length > 0) return resolve(true);
    const late = () => reject(new Error(`no ${mark} within ${timeoutMs / 1000} s`));
    const timer = setTimeout(late, timeoutMs);
    const observer = new PerformanceObserver(() => {
        if (performance.getEntriesByName(mark).length === 0) return;
        observer.disconnect();
        clearTimeout(timer);
        resolve(true);
    });
    observer.observe({ type: "mark" });
})"""
"""Resolves once the page has made the mark (at once if it has)."""


def page_load(
    browser: Browser, url: str, token: str, timeout: float, settle: bool = False
) -> dict[str, Any]:
    """One load of ``url`` in a fresh context, signed in as a browser that signed in earlier is
    (the session's cookies): ms to the mark, and what the charts drew. ``settle``: before the
    page is closed, also wait until it has done what it put off until the browser is idle.
    Also :data:`SCHEDSTAT` of the page's renderer main thread (Linux)."""
    renderers_before = renderer_pids()
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
        # One evaluate (CDP) that resolves at the mark, not wait_for_function: the master's
        # Content-Security-Policy forbids the eval that wait_for_function's predicate needs. Not
        # polled either: each poll is a DevTools message the page's main thread handles (polling
        # every 20 ms, a traced load had 24 of them, 11-21 ms of that thread; 18 and 6-13 ms
        # now). The time is the mark's own.
        page.evaluate(AT_MARK, [MARK, timeout * 1000])
        if settle:
            page.evaluate(SETTLED)
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
        # The renderer's main thread until now: all tasks, of which JavaScript, layout, style;
        # and its CPU time.
        for name in PAGE_METRICS:
            sample[name] = round(metrics.get(name, 0.0) * 1000, 1)
        sample.update(main_thread_schedstat(renderer_pids() - renderers_before))
        return sample
    finally:
        context.close()


PAGE_METRICS = (
    "TaskDuration",
    "ScriptDuration",
    "LayoutDuration",
    "RecalcStyleDuration",
    "ThreadTime",
)
"""Chromium's figures for the page's renderer main thread (``Performance.getMetrics``) that each
load records, in ms: its tasks' time, of which JavaScript, layout and style; its CPU time."""

TOP_TASK = "RunTask"
"""Chromium's outermost event of a task a thread runs."""
SCRIPT = "v8.callFunction"
"""V8 running a JavaScript function called from the browser (an event handler, a timer, a
promise's continuation)."""
TRACE_CATEGORIES = [
    "toplevel",
    "devtools.timeline",
    "disabled-by-default-devtools.timeline",
    "v8",
    "v8.execute",
    "blink",
    "cc",
    "gpu",
]


def traced_load(
    browser: Browser, url: str, token: str, timeout: float, path: Path
) -> dict[str, Any]:
    """One more load of ``url`` under Chromium's tracing (written to ``path``, from before the
    navigation until the page, after the mark, has done what it put off until the browser is
    idle, so that work put off past the mark counts too): the renderer main thread's tasks,
    in all and by event, and its workers' tasks in all."""
    browser.start_tracing(path=str(path), categories=TRACE_CATEGORIES)  # every renderer
    try:
        sample = page_load(browser, url, token, timeout, settle=True)
    finally:
        browser.stop_tracing()
    return {
        "ms": sample["ms"],
        **main_thread_tasks(json.loads(path.read_text()), url),
        **{name: sample[name] for name in SCHEDSTAT},
    }


def traced_loads(
    browser: Browser, url: str, token: str, timeout: float, path: Path, count: int
) -> dict[str, Any]:
    """``count`` traced loads (``traced_load``; the traces written to ``path``, or with
    ``-1``, ``-2``, ... added to its name when more than one): their median summary."""
    paths = [path] if count == 1 else [path.with_stem(f"{path.stem}-{k + 1}") for k in range(count)]
    return median_summary([traced_load(browser, url, token, timeout, p) for p in paths])


def median_summary(summaries: list[dict[str, Any]]) -> dict[str, Any]:
    """The median of traced loads' summaries, number by number (an event missing from a
    load's top 15 counts as 0 there), with each load's main-thread total."""
    if len(summaries) == 1:
        return summaries[0]

    events = {name for s in summaries for name in s.get("self_ms_by_event", {})}
    by_event = {
        name: median_of_known([s.get("self_ms_by_event", {}).get(name, 0.0) for s in summaries])
        for name in events
    }
    return {
        "loads": len(summaries),
        "ms": median_of_known([s["ms"] for s in summaries]),
        "main_thread_ms": median_of_known([s["main_thread_ms"] for s in summaries]),
        "main_thread_ms_each": [s["main_thread_ms"] for s in summaries],
        "main_thread_cpu_ms": median_of_known([s.get("main_thread_cpu_ms") for s in summaries]),
        "worker_thread_ms": median_of_known([s.get("worker_thread_ms") for s in summaries]),
        **{name: median_of_known([s.get(name) for s in summaries]) for name in SCHEDSTAT},
        "self_ms_by_event": dict(sorted(by_event.items(), key=lambda kv: -(kv[1] or 0))[:15]),
    }


WORKER_THREAD = "DedicatedWorker thread"
"""Chromium's name of a page's worker thread (the UI's charts are drawn in one)."""


def _threads(events: list[dict[str, Any]], name: str) -> set[tuple[int, int]]:
    return {
        (e["pid"], e["tid"])
        for e in events
        if e.get("ph") == "M" and e.get("name") == "thread_name"
        and e.get("args", {}).get("name") == name
    }  # fmt: skip


def _spans(
    events: list[dict[str, Any]], threads: set[tuple[int, int]]
) -> dict[tuple[int, int], list[dict[str, Any]]]:
    """Each thread's spans (complete events, and begin/end pairs made one)."""
    spans: dict[tuple[int, int], list[dict[str, Any]]] = {t: [] for t in threads}
    begun: dict[tuple[int, int], list[dict[str, Any]]] = {t: [] for t in threads}
    for e in events:
        key = (e.get("pid"), e.get("tid"))
        if key not in spans:
            continue
        if e.get("ph") == "X" and "dur" in e:
            spans[key].append(e)
        elif e.get("ph") == "B":  # a begin/end pair is one span
            begun[key].append(e)
        elif e.get("ph") == "E" and begun[key]:
            start = begun[key].pop()
            spans[key].append({**start, "dur": e["ts"] - start["ts"]})
    return spans


def _self_times(spans: list[dict[str, Any]]) -> tuple[float, dict[str, float]]:
    """The top-level tasks' time in all (µs), and each event's own time (its children's
    taken out) by name."""
    own: dict[str, float] = {}
    stack: list[dict[str, Any]] = []
    tasks = 0.0
    for e in sorted(spans, key=lambda e: (e["ts"], -e["dur"])):
        while stack and e["ts"] >= stack[-1]["ts"] + stack[-1]["dur"]:
            stack.pop()
        if stack:
            own[stack[-1]["name"]] -= e["dur"]
        elif e["name"] == TOP_TASK:
            tasks += e["dur"]
        own[e["name"]] = own.get(e["name"], 0.0) + e["dur"]
        stack.append(e)
    return tasks, own


def _tasks_cpu(spans: list[dict[str, Any]]) -> float | None:
    """The top-level tasks' own CPU time in all (µs; Chromium's thread time, ``tdur``), or
    None where the trace has none. On a busy machine a task's duration also counts the time its
    thread waited for a CPU; this does not."""
    cpu, timed, end = 0.0, False, float("-inf")
    for e in sorted(spans, key=lambda e: (e["ts"], -e["dur"])):
        if e["ts"] < end:  # inside an outer span (as ``_self_times`` counts the tasks)
            continue
        end = e["ts"] + e["dur"]
        if e["name"] == TOP_TASK and "tdur" in e:
            cpu, timed = cpu + e["tdur"], True
    return cpu if timed else None


PAGE_EVENTS = {"CommitLoad", "ParseHTML", "ResourceSendRequest"}
"""Events of a renderer's main thread that name the address it loads or asks for."""


def _page_renderer(
    events: list[dict[str, Any]],
    spans: dict[tuple[int, int], list[dict[str, Any]]],
    url: str | None,
) -> tuple[int, int]:
    """The main thread of the renderer that loaded ``url`` (an event of it names the address's
    origin); without ``url``, or where none does, the one that ran the most JavaScript (the
    browser's own pages, a new tab's, may run more than a page whose charts a worker draws)."""
    if url is not None:
        origin = "/".join(url.split("/")[:3])
        named = {
            (e.get("pid"), e.get("tid"))
            for e in events
            if e.get("name") in PAGE_EVENTS and origin in json.dumps(e.get("args", {}))
        }
        for thread in spans:
            if thread in named:
                return thread
    return max(spans, key=lambda t: sum(e["dur"] for e in spans[t] if e["name"] == SCRIPT))


def main_thread_tasks(
    trace: dict[str, Any] | list[dict[str, Any]], url: str | None = None
) -> dict[str, Any]:
    """The main thread of the page's renderer (``_page_renderer``): its top-level tasks in
    all (their duration, and their own CPU time: ``_tasks_cpu``), and the self time (its own,
    its children's taken out) of the events on it by name: where the thread's time went; and
    the top-level tasks of that renderer's workers in all (``None``: it had none)."""
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    spans = _spans(events, _threads(events, "CrRendererMain"))
    if not spans:
        return {"main_thread_ms": None}
    page = _page_renderer(events, spans, url)
    tasks, own = _self_times(spans[page])
    cpu = _tasks_cpu(spans[page])
    workers = _spans(events, {t for t in _threads(events, WORKER_THREAD) if t[0] == page[0]})
    top = sorted(own.items(), key=lambda kv: -kv[1])[:15]
    return {
        "main_thread_ms": round(tasks / 1000, 1),
        "main_thread_cpu_ms": None if cpu is None else round(cpu / 1000, 1),
        "worker_thread_ms": (
            round(sum(_self_times(w)[0] for w in workers.values()) / 1000, 1) if workers else None
        ),
        "self_ms_by_event": {name: round(us / 1000, 1) for name, us in top},
    }


def importance_ready(base: str, experiment_id: int, token: str, timeout: float) -> float | None:
    """Seconds until ``/importance`` answers ``ready`` (computed in the master's background:
    its memory counts), ``None`` past ``timeout``."""
    started = time.monotonic()
    headers = {"Authorization": f"Bearer {token}"}
    with httpx.Client(base_url=base + "/api/v1", timeout=timeout, headers=headers) as http:
        while time.monotonic() - started < timeout:
            response = http.get(f"/experiments/{experiment_id}/importance")
            response.raise_for_status()
            if response.json()["ready"]:
                return round(time.monotonic() - started, 1)
            time.sleep(0.5)
    return None


def endpoint_times(
    base: str, experiment_id: int, token: str, timeout: float, repeats: int = 10
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
    with httpx.Client(base_url=base + "/api/v1", timeout=timeout, headers=headers) as http:
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
            kept_file = args.keep and kind == "sqlite"  # PostgreSQL's database is kept anyway
            db_home = Path(tempfile.mkdtemp(prefix="pedl-p6-db-")) if kept_file else home
            backend = make_backend(kind, db_home)
            experiment_id, load_s = load(backend.url, args.trials, args.points)
            if args.keep:
                print(f"kept: --db-url {backend.url}", file=sys.stderr)
                backend = Backend(kind, backend.url)
            if args.load_only:
                return {
                    "benchmark": "p6_load",
                    "backend": kind,
                    "trials": args.trials,
                    "load_seconds": load_s,
                    "url": backend.url,
                }
        try:
            master = MasterProcess(home, backend.url, spare_workers=0).start()
            try:
                rss_start = MemoryPeak(master.pid).now_mb()
                route = f"/experiments/{experiment_id}"
                if args.page == "visualization":
                    route += "/visualization"
                url = f"{master.url}/#{route}"
                token = master.sign_in()
                in_loads = MemoryPeak(master.pid)
                with sync_playwright() as playwright, in_loads:
                    browser = playwright.chromium.launch(
                        executable_path=CHROMIUM,
                        headless=True,
                        args=CHROMIUM_ARGS + args.chromium_arg,
                    )
                    try:
                        system_load = _env.Load.start()
                        warmup = page_load(browser, url, token, args.timeout)
                        cpu_before = tree_cpu(master.pid)
                        loads = [
                            page_load(browser, url, token, args.timeout) for _ in range(args.loads)
                        ]
                        cpu_after = tree_cpu(master.pid)
                        system_load.stop()
                        traced = (
                            traced_loads(
                                browser, url, token, args.timeout, args.trace, args.trace_loads
                            )
                            if args.trace
                            else None
                        )
                        master_cpu = cpu_after[0] - cpu_before[0]
                        browser_cpu = cpu_after[1] - cpu_before[1]
                    finally:
                        browser.close()
                in_endpoints = MemoryPeak(master.pid)
                with in_endpoints:
                    importance_s = importance_ready(master.url, experiment_id, token, args.timeout)
                    endpoints = endpoint_times(
                        master.url,
                        experiment_id,
                        token,
                        args.timeout,
                        10 if args.trials <= 10_000 else 3,
                    )
                rss_end = in_endpoints.now_mb()
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
        "series_drawn": sorted({sample["series"] for sample in loads}, key=str),
        "parallel_trials": sorted({sample["trials"] for sample in loads}, key=str),
        "median_ms": {
            name: round(statistics.median(x[name] for x in loads), 1)
            for name in ("dcl_ms", "api_start_ms", "api_done_ms", "ms", *PAGE_METRICS)
        }
        | {name: median_of_known([x[name] for x in loads]) for name in SCHEDSTAT},
        "master_cpu_ms_per_load": round(master_cpu * 1000 / len(loads), 1),
        "browser_cpu_ms_per_load": round(browser_cpu * 1000 / len(loads), 1),
        "master_rss_mb": {
            "started": rss_start,
            "peak_in_page_loads": in_loads.peak_mb,
            "peak_in_endpoint_calls": in_endpoints.peak_mb,
            "end": rss_end,
        },
        "importance_ready_s": importance_s,
        "traced_load": traced,
        "api_median_ms_in_page": {p: statistics.median(d) for p, d in sorted(api_calls.items())},
        "endpoint_median_ms": endpoints,
        **system_load.as_dict(),
        "machine": _env.machine(),
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
        "--trace",
        type=Path,
        help="after the loads, one more under Chromium's tracing, written here; its renderer "
        "main thread's tasks are summarised in the result",
    )
    parser.add_argument(
        "--trace-loads",
        type=int,
        default=1,
        help="with --trace: this many traced loads (FILE-1, FILE-2, ... when more than one), "
        "their median summary",
    )
    parser.add_argument(
        "--chromium-arg", action="append", default=[], help="another Chromium flag (repeatable)"
    )
    parser.add_argument(
        "--timeout", type=float, default=60, help="seconds for one page load or one API call"
    )
    parser.add_argument(
        "--optuna", action="store_true", help="the same data in optuna-dashboard too"
    )
    parser.add_argument("--optuna-only", action="store_true", help="optuna-dashboard only")
    parser.add_argument("--optuna-db", type=Path, help="an Optuna storage loaded before (--keep)")
    parser.add_argument(
        "--load-only", action="store_true", help="load and keep the databases, measure nothing"
    )
    parser.add_argument("--optuna-loads", type=int, default=3)
    parser.add_argument("--optuna-cap", type=float, default=120, help="seconds per load")
    parser.add_argument(
        "--optuna-memory-gb",
        type=float,
        default=12,
        help="optuna-dashboard's address-space limit (it took 5.2 GB at 10,000 trials)",
    )
    args = parser.parse_args()
    if args.load_only:
        args.keep = True
    if args.db_url and args.backend == "both":
        parser.error("--db-url needs --backend sqlite or postgresql")
    if not (UI_DIST / "index.html").is_file():
        sys.exit(f"the web UI is not built ({UI_DIST}): run `make ui`")
    kinds = ["sqlite", "postgresql"] if args.backend == "both" else [args.backend]
    measures: list[Callable[[argparse.Namespace], dict[str, Any]]] = []
    if args.optuna or args.optuna_only:
        measures.append(optuna_run)
    if not args.optuna_only:
        measures.extend(functools.partial(run, kind) for kind in kinds)
    for measure in measures:
        line = json.dumps(measure(args))
        print(line, flush=True)
        if args.out is not None:
            with args.out.open("a") as out:
                out.write(line + "\n")


if __name__ == "__main__":
    main()
