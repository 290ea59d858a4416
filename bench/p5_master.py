"""P5 helpers: a master as a separate process on loopback, a database per run, trials and tokens.

Used by ``p5_throughput.py`` and ``p5_latency.py`` (not run by itself). The master is
``python -m pedl.master`` (API + orchestrator) with its own home; the benchmark's experiment is
created PAUSED through the API, so the orchestrator starts no trial process, and the trials are
inserted with the repository (``trials.create_trial``), which is how the orchestrator makes them
and the only way to get their raw bearer tokens.
"""

from __future__ import annotations

import base64
import contextlib
import io
import math
import os
import secrets
import signal
import socket
import subprocess
import sys
import tarfile
import time
from dataclasses import dataclass
from pathlib import Path

import httpx
import psycopg

from pedl.db import Database, experiments, workspaces
from pedl.db import trials as trials_repo

PG_ADMIN_DSN = "host=127.0.0.1 port=5432 user=postgres dbname=test connect_timeout=5"
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")

CONFIG_YAML = """\
name: p5-ingest
entrypoint: model_def:MyTrial
hyperparameters:
  lr: 0.1
searcher:
  name: single
  metric: val_loss
  max_length: {batches: 100}
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` so far (from /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def child_pids(pid: int) -> list[int]:
    """The processes ``pid`` started that run now (a master's read processes, its trials); none
    once ``pid`` itself has exited (a renderer of a closed browser context)."""
    children: list[int] = []
    with contextlib.suppress(FileNotFoundError):
        for task in Path(f"/proc/{pid}/task").iterdir():
            with contextlib.suppress(FileNotFoundError):
                children += [int(child) for child in (task / "children").read_text().split()]
    return children


def cpu_seconds_of(pids: list[int]) -> float:
    """:func:`cpu_seconds` summed over ``pids`` (those that still run)."""
    total = 0.0
    for pid in pids:
        with contextlib.suppress(FileNotFoundError, ProcessLookupError):
            total += cpu_seconds(pid)
    return total


def postgres_cpu_seconds() -> float:
    """CPU seconds of every ``postgres`` process visible now (server and backends).

    Approximate: backends that exit between two readings lose their time, and other users of
    the same server (tests running beside the benchmark) are counted too.
    """
    total = 0.0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if (entry / "comm").read_text().strip() == "postgres":
                total += cpu_seconds(int(entry.name))
        except (FileNotFoundError, ProcessLookupError, PermissionError):
            continue
    return total


@dataclass
class Backend:
    """A database for one run: ``url`` and, for PostgreSQL, the database to drop afterwards."""

    kind: str
    url: str
    pg_name: str | None = None

    def drop(self) -> None:
        if self.pg_name is not None:
            with psycopg.connect(PG_ADMIN_DSN, autocommit=True) as conn:
                conn.execute(f'DROP DATABASE IF EXISTS "{self.pg_name}" WITH (FORCE)')


def make_trial(database: Database) -> int:
    """A trial of a new experiment (searcher metric ``loss``) in a migrated ``database``, made
    directly in it; its id."""
    with database.session(write=True) as session:
        workspaces.ensure_defaults(session)
        experiment_id = experiments.create_experiment(
            session,
            config={"searcher": {"metric": "loss"}},
            config_text="searcher: {metric: loss}",
            model_definition=b"",
            owner="admin",
            searcher_metric="loss",
            smaller_is_better=True,
        ).id
        trial, _token = trials_repo.create_trial(
            session, experiment_id=experiment_id, hparams={}, seed=1
        )
        return trial.id


def make_backend(kind: str, home: Path) -> Backend:
    """A fresh SQLite file under ``home`` or a fresh PostgreSQL database on 127.0.0.1:5432."""
    if kind == "sqlite":
        return Backend(kind, f"sqlite:///{home / 'pedl.db'}")
    if kind != "postgresql":
        raise ValueError(f"unknown backend {kind!r}")
    name = f"pedl_bench_{secrets.token_hex(6)}"
    with psycopg.connect(PG_ADMIN_DSN, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    return Backend(kind, f"postgresql+psycopg://postgres@127.0.0.1:5432/{name}", name)


class MasterProcess:
    """``python -m pedl.master`` on a free loopback port; its output goes to ``home/master.log``."""

    def __init__(
        self,
        home: Path,
        db_url: str,
        *,
        cpu_slots: int = 1,
        spare_workers: int | None = None,
        code: Path | None = None,
    ) -> None:
        """``spare_workers``: the master's ``PEDL_SPARE_WORKERS`` (``None``: the environment's,
        else the master's default). 0 for a benchmark that runs no trial: each spare, and the
        worker template they are forked from, imports TensorFlow as the master starts (seconds
        of CPU beside what is measured), and their memory counts in the master's as
        ``p6_ui`` sums it (the master and every process below it). ``code``: a directory
        holding another copy of the ``pedl`` package, run instead of this checkout's (the
        master starts there, with it first on ``PYTHONPATH``)."""
        self.home = home
        self.db_url = db_url
        self.cpu_slots = cpu_slots
        self.spare_workers = spare_workers
        self.code = code
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def start(self) -> MasterProcess:
        self.home.mkdir(parents=True, exist_ok=True)
        env = {
            **os.environ,
            "PEDL_HOME": str(self.home / "pedl"),
            "PEDL_HOST": "127.0.0.1",
            "PEDL_PORT": str(self.port),
            "PEDL_DB_URL": self.db_url,
            "PEDL_CPU_SLOTS": str(self.cpu_slots),
            # The benchmarks' experiments start no trial process: as root, the default
            # trial_user (nobody) would refuse them for a Python under /root.
            "PEDL_TRIAL_USER": "",
        }
        if self.spare_workers is not None:
            env["PEDL_SPARE_WORKERS"] = str(self.spare_workers)
        env.pop("PEDL_CONFIG_FILE", None)
        if self.code is not None:
            env["PYTHONPATH"] = os.pathsep.join([str(self.code), env.get("PYTHONPATH", "")])
        # The master creates (or resets) its administrator with this password; the
        # benchmarks sign in as it (``sign_in``, ``client``).
        os.environ.setdefault("PEDL_ADMIN_PASSWORD", secrets.token_urlsafe(16))
        env["PEDL_ADMIN_PASSWORD"] = os.environ["PEDL_ADMIN_PASSWORD"]
        with open(self.home / "master.log", "ab") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "pedl.master"],
                env=env,
                cwd=self.code,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        deadline = time.monotonic() + 900  # a loaded machine (load 20) starts one in minutes
        with httpx.Client(base_url=self.url, timeout=5) as http:
            while time.monotonic() < deadline:
                if self.proc.poll() is not None:
                    raise RuntimeError(f"the master exited:\n{self.log()}")
                try:
                    if http.get("/api/v1/health").status_code == 200:
                        return self
                except httpx.TransportError:
                    pass
                time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"the master did not start:\n{self.log()}")

    def sign_in(self) -> str:
        """A session token of the master's administrator."""
        body = {"username": "admin", "password": os.environ["PEDL_ADMIN_PASSWORD"]}
        response = httpx.post(f"{self.url}/api/v1/auth/login", json=body, timeout=30)
        response.raise_for_status()
        return str(response.json()["token"])

    def client(self, timeout: float = 30) -> httpx.Client:
        """An API client (``/api/v1``) signed in as the administrator."""
        return httpx.Client(
            base_url=self.url + "/api/v1",
            timeout=timeout,
            headers={"Authorization": f"Bearer {self.sign_in()}"},
        )

    def log(self) -> str:
        path = self.home / "master.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def _archive() -> str:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        data = b"class MyTrial:\n    pass\n"
        info = tarfile.TarInfo("model_def.py")
        info.size = len(data)
        archive.addfile(info, io.BytesIO(data))
    return base64.b64encode(buffer.getvalue()).decode()


def make_trials(master: MasterProcess, count: int) -> list[tuple[int, str]]:
    """A PAUSED experiment (through the API) and ``count`` trials of it: ``(id, token)`` each."""
    with master.client() as http:
        response = http.post(
            "/experiments",
            json={"config": CONFIG_YAML, "model_definition": _archive(), "activate": False},
        )
        response.raise_for_status()
        experiment_id: int = response.json()["id"]
    database = Database(master.db_url)
    try:
        made = []
        with database.session(write=True) as session:
            for i in range(count):
                trial, token = trials_repo.create_trial(
                    session, experiment_id=experiment_id, hparams={"lr": 0.1}, seed=i
                )
                session.flush()
                made.append((trial.id, token))
        return made
    finally:
        database.dispose()


def count_metric_rows(db_url: str) -> int:
    """How many metric rows the database holds (a check that the load was really stored)."""
    database = Database(db_url)
    try:
        with database.engine.connect() as conn:
            return int(conn.exec_driver_sql("SELECT count(*) FROM metrics").scalar_one())
    finally:
        database.dispose()


def rows_body(start_batch: int, count: int, seed: int) -> bytes:
    """A ``{"rows": [...]}`` body of ``count`` training rows at batches start_batch+1, ...

    Built by hand (not json.dumps of a dict) only to keep the load generator cheap; it is
    valid JSON of exactly the API's schema.
    """
    parts = []
    for i in range(count):
        batch = start_batch + i + 1
        loss = 1.0 / (1 + batch + seed)
        parts.append(
            f'{{"kind":"training","total_batches":{batch},'
            f'"metrics":{{"loss":{loss:.6f},"accuracy":{1 - loss:.6f}}}}}'
        )
    return ('{"rows":[' + ",".join(parts) + "]}").encode()


def quantile(sorted_values: list[float], q: float) -> float:
    """Nearest-rank quantile of an ascending list."""
    if not sorted_values:
        return float("nan")
    index = min(len(sorted_values) - 1, max(0, math.ceil(q * len(sorted_values)) - 1))
    return sorted_values[index]
