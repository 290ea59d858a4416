"""CLI start-up: CPU time of ``pedl --help`` beside Determined's ``det --help``, and of
``pedl experiment list`` against a PEDL master beside ``det experiment list``.

    .venv/bin/python bench/p_cli_startup.py --det /tmp/det-venv/bin/det \\
        [--runs 21] [--experiments 20] [--out FILE.jsonl]

``det`` is Determined 0.38.1 in a scratch virtual environment of its own
(``python3.11 -m venv /tmp/det-venv && /tmp/det-venv/bin/pip install determined==0.38.1``),
never a dependency of this project. Each command is a fresh process; its CPU time is the
user + system time the kernel reports for it when it ends (``os.wait4``), so neither the
benchmark nor a server counts. Every round runs each command once, in a shuffled order, so the
machine's load falls on both alike; the medians over ``--runs`` rounds are compared.

``experiment list`` needs a master. PEDL's: ``pedl master`` in a temporary home on loopback,
with ``--experiments`` experiments created PAUSED (no trial runs). Determined's master is not
available here, and ``det`` cannot talk to PEDL's (it asks ``GET /info`` first, which PEDL does
not serve), so ``det experiment list`` talks to a stand-in: a small HTTP server in a process of
its own that answers the requests ``det experiment list`` makes (``/info``; the login, or
``/api/v1/me`` to check its cached token; ``/api/v1/experiments``) with Determined's JSON
shapes and the same number of experiments. Only each client's own process is measured, so what
is compared is its own work: its imports, its requests, parsing the answer, printing the table.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx

ADMIN_PASSWORD = "bench-cli-startup-1"

CONFIG_YAML = """\
name: cli-startup-{i}
entrypoint: model_def:MyTrial
hyperparameters:
  lr: 0.1
searcher:
  name: single
  metric: val_loss
  max_length: {{batches: 100}}
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def cpu_of(command: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(user + system CPU seconds, wall seconds) of ``command`` run to its end; it must
    succeed."""
    start = time.perf_counter()
    process = subprocess.Popen(
        command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - start
    process.returncode = os.waitstatus_to_exitcode(status)  # so Popen does not wait again
    if process.returncode != 0:
        raise RuntimeError(f"{command} exited with {process.returncode}")
    return usage.ru_utime + usage.ru_stime, wall


# --- a stand-in for Determined's master, for `det experiment list` ------------------------


def det_experiment(i: int) -> dict[str, Any]:
    """One experiment as Determined's ``GET /api/v1/experiments`` shows it (v1Experiment)."""
    return {
        "id": i,
        "name": f"cli-startup-{i}",
        "description": "",
        "labels": [],
        "startTime": "2026-11-29T04:00:00.000000Z",
        "state": "STATE_PAUSED",
        "archived": False,
        "numTrials": 0,
        "trialIds": [],
        "displayName": "admin",
        "userId": 1,
        "username": "admin",
        "resourcePool": "default",
        "searcherType": "single",
        "searcherMetric": "val_loss",
        "notes": "",
        "jobId": f"job-{i}",
        "forkedFrom": None,
        "progress": 0.0,
        "projectId": 1,
        "projectName": "Uncategorized",
        "workspaceId": 1,
        "workspaceName": "Uncategorized",
        "parentArchived": False,
        "config": {"name": f"cli-startup-{i}", "searcher": {"name": "single"}},
        "originalConfig": CONFIG_YAML.format(i=i),
        "projectOwnerId": 1,
        "checkpointSize": "0",
        "checkpointCount": 0,
        "unmanaged": False,
    }


def serve_det_stand_in(port: int, experiments: int) -> None:
    """Answer ``det experiment list``'s requests on ``port`` until killed."""
    user = {"id": 1, "username": "admin", "admin": True, "active": True, "displayName": "admin"}
    listing = {
        "experiments": [det_experiment(i) for i in range(1, experiments + 1)],
        "pagination": {
            "offset": 0,
            "limit": 0,
            "startIndex": 0,
            "endIndex": experiments,
            "total": experiments,
        },
    }
    answers = {
        "/info": {
            "version": "0.38.1",
            "masterId": "bench",
            "clusterId": "bench",
            "clusterName": "bench",
            "telemetryEnabled": False,
            "ssoProviders": [],
            "externalLoginUri": None,
            "externalLogoutUri": None,
            "branding": "determined",
            "rbacEnabled": False,
            "strictJobQueueControl": False,
            "featureSwitches": [],
            "userManagementEnabled": True,
        },
        "/api/v1/auth/login": {"token": "bench-token", "user": user},
        "/api/v1/me": {"user": user},
        "/api/v1/experiments": listing,
    }

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def _answer(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            if length:
                self.rfile.read(length)
            body = answers.get(self.path.split("?")[0])
            data = json.dumps(body if body is not None else {}).encode()
            self.send_response(200 if body is not None else 404)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = _answer

        def log_message(self, format: str, *args: Any) -> None:
            pass

    ThreadingHTTPServer(("127.0.0.1", port), Handler).serve_forever()


@contextmanager
def det_stand_in(experiments: int) -> Iterator[str]:
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, __file__, "--serve-det-stand-in", str(port), str(experiments)]
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                httpx.get(f"{url}/info", timeout=1).raise_for_status()
                break
            except httpx.HTTPError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
        yield url
    finally:
        process.terminate()
        process.wait(timeout=10)


# --- PEDL's master ------------------------------------------------------------------------


@contextmanager
def pedl_master(pedl: str, experiments: int, home: Path) -> Iterator[str]:
    port = free_port()
    env = {**os.environ, "PEDL_ADMIN_PASSWORD": ADMIN_PASSWORD}
    log = (home / "master.log").open("w")
    # No spare workers (no trial runs); trials as this user (the venv may be under /root).
    command = [pedl, "master", "--port", str(port), "--home", str(home), "--spare-workers", "0"]
    process = subprocess.Popen(
        [*command, "--trial-user", ""],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                httpx.get(f"{url}/api/v1/health", timeout=1).raise_for_status()
                break
            except httpx.HTTPError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError((home / "master.log").read_text()) from None
                time.sleep(0.2)
        model_dir = home / "model_def"
        model_dir.mkdir()
        (model_dir / "model_def.py").write_text("class MyTrial:\n    pass\n")
        client_env = pedl_env(home)
        for i in range(1, experiments + 1):
            config = home / f"config-{i}.yaml"
            config.write_text(CONFIG_YAML.format(i=i))
            made = subprocess.run(
                [pedl, "-m", url, "experiment", "create", str(config), str(model_dir), "--paused"],
                env=client_env,
                capture_output=True,
                text=True,
            )
            if made.returncode != 0:
                raise RuntimeError(f"experiment create: {made.stdout}{made.stderr}")
        yield url
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
        log.close()


def pedl_env(home: Path) -> dict[str, str]:
    return {
        **os.environ,
        "PEDL_USER": "admin",
        "PEDL_PASSWORD": ADMIN_PASSWORD,
        "PEDL_CONFIG_DIR": str(home / "client-config"),
    }


# --- the benchmark ------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pedl", default=str(Path(sys.executable).with_name("pedl")))
    parser.add_argument("--det", default="/tmp/det-venv/bin/det")
    parser.add_argument("--runs", type=int, default=21)
    parser.add_argument("--experiments", type=int, default=20)
    parser.add_argument("--out", type=Path, default=None, help="append the result (JSON line)")
    parser.add_argument("--serve-det-stand-in", nargs=2, type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_det_stand_in:
        serve_det_stand_in(*args.serve_det_stand_in)
        return
    det_version = subprocess.run(
        [args.det, "--version"], capture_output=True, text=True, check=True
    ).stdout.strip()
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="pedl-cli-bench-") as tmp:
        home = Path(tmp)
        det_home = home / "det-home"
        det_home.mkdir()
        det_env = {
            **os.environ,
            "HOME": str(det_home),  # det keeps its token cache under ~/.determined
            "DET_USER": "admin",
            "DET_PASS": "Bench-pass-1",  # complex enough: det warns of a weak one
        }
        with (
            pedl_master(args.pedl, args.experiments, home) as pedl_url,
            det_stand_in(args.experiments) as det_url,
        ):
            commands = {
                "pedl --help": ([args.pedl, "--help"], pedl_env(home)),
                "det --help": ([args.det, "--help"], det_env),
                "pedl experiment list": (
                    [args.pedl, "-m", pedl_url, "experiment", "list"],
                    pedl_env(home),
                ),
                "det experiment list": (
                    [args.det, "-m", det_url, "experiment", "list"],
                    det_env,
                ),
            }
            for name, (command, env) in commands.items():  # warm-up; each must succeed
                out = subprocess.run(command, env=env, capture_output=True, text=True)
                if out.returncode != 0:
                    raise SystemExit(f"{name}: exit {out.returncode}\n{out.stdout}\n{out.stderr}")
                if (
                    "experiment list" in name
                    and f"cli-startup-{args.experiments}" not in out.stdout
                ):
                    raise SystemExit(f"{name} did not list the experiments:\n{out.stdout}")
            cpu: dict[str, list[float]] = {name: [] for name in commands}
            wall: dict[str, list[float]] = {name: [] for name in commands}
            order = list(commands)
            for _ in range(args.runs):
                random.shuffle(order)
                for name in order:
                    c, w = cpu_of(*commands[name])
                    cpu[name].append(c)
                    wall[name].append(w)
    load_after = os.getloadavg()
    med = {name: statistics.median(values) for name, values in cpu.items()}
    result = {
        "benchmark": "cli_startup",
        "time": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
        "runs": args.runs,
        "experiments": args.experiments,
        "det": det_version,
        "python": sys.version.split()[0],
        "cpus": os.cpu_count(),
        "load_before": [round(x, 2) for x in load_before],
        "load_after": [round(x, 2) for x in load_after],
        "cpu_median_s": {name: round(v, 3) for name, v in med.items()},
        "cpu_min_s": {name: round(min(v), 3) for name, v in cpu.items()},
        "cpu_max_s": {name: round(max(v), 3) for name, v in cpu.items()},
        "wall_median_s": {name: round(statistics.median(v), 3) for name, v in wall.items()},
        "help_ratio": round(med["pedl --help"] / med["det --help"], 3),
        "list_ratio": round(med["pedl experiment list"] / med["det experiment list"], 3),
    }
    result["help_goal_met"] = result["help_ratio"] <= 0.5
    result["list_goal_met"] = result["list_ratio"] <= 1.0
    line = json.dumps(result)
    print(line)
    if args.out is not None:
        with args.out.open("a") as f:
            f.write(line + "\n")
    for name in commands:
        print(
            f"{name:24} CPU median {med[name] * 1000:6.0f} ms "
            f"(min {min(cpu[name]) * 1000:.0f}, max {max(cpu[name]) * 1000:.0f}); "
            f"wall median {statistics.median(wall[name]) * 1000:.0f} ms",
            file=sys.stderr,
        )


if __name__ == "__main__":
    main()
