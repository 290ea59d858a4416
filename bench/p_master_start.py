"""Master start: seconds from ``python -m pedl.master`` to its first answer to a signed-in
``GET /api/v1/experiments``, and the CPU seconds the master and its read processes took until
then and through a graceful stop, on a new SQLite home; for this tree and, side by side,
another (``--peer DIR``: e.g. ``git worktree add /tmp/wt_before REV``).

    .venv/bin/python bench/p_master_start.py [--peer /tmp/wt_before] [--runs 7] [--out F.jsonl]

Each run is a fresh master with its default read processes (1 on a machine of 2 or more
cores); the variants alternate within each round, so the machine's load falls on both alike.
CPU time is what ``os.wait4`` reports for the master when it ends: its own and that of the
children it waited for (its read processes, which it stops and waits for). Prints one JSON
line per run, then each variant's medians and their ~95% intervals, with the load average
and the machine (``bench/_env.py``).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import _env
import httpx

from pedl.exec import free_ports

PASSWORD = "bench-master-start-1"


def start_once(tree: Path) -> dict[str, float]:
    """One master from ``tree``: seconds to its first signed-in list, CPU seconds in all."""
    with tempfile.TemporaryDirectory() as home:
        (port,) = free_ports(1)
        env = {
            **os.environ,
            "PYTHONPATH": str(tree),
            "HOME": home,
            "PEDL_HOME": str(Path(home) / "pedl"),
            "PEDL_PORT": str(port),
            "PEDL_ADMIN_PASSWORD": PASSWORD,
            "PEDL_SPARE_WORKERS": "0",
        }
        env.pop("PEDL_DB_URL", None)
        began = time.monotonic()
        master = subprocess.Popen(
            [sys.executable, "-m", "pedl.master"],
            cwd=tree,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        url = f"http://127.0.0.1:{port}/api/v1"
        with httpx.Client(base_url=url, timeout=30) as http:
            while True:
                assert master.poll() is None, "the master exited"
                try:
                    login = http.post(
                        "/auth/login", json={"username": "admin", "password": PASSWORD}
                    )
                except httpx.TransportError:
                    time.sleep(0.05)
                    continue
                token = login.json()["token"]
                listed = http.get("/experiments", headers={"Authorization": f"Bearer {token}"})
                assert listed.status_code == 200, listed.text
                break
        ready = time.monotonic() - began
        master.terminate()
        _pid, _status, usage = os.wait4(master.pid, 0)
        master.returncode = 0  # reaped by wait4
        return {"ready_s": round(ready, 3), "cpu_s": round(usage.ru_utime + usage.ru_stime, 3)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--peer", type=Path, help="another tree to measure beside this one")
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    trees = {"this": _env.ROOT}
    if args.peer is not None:
        trees["peer"] = args.peer.resolve()
    machine = _env.machine()
    results: dict[str, list[dict[str, float]]] = {name: [] for name in trees}
    for round_ in range(args.runs):
        for name, tree in trees.items():
            before = _env.load_average()
            figures = start_once(tree)
            results[name].append(figures)
            _env.emit(
                {
                    "bench": "master_start",
                    "variant": name,
                    "tree": str(tree),
                    "round": round_,
                    **figures,
                    "load_before": before,
                    "load_after": _env.load_average(),
                    "machine": machine,
                },
                args.out,
            )
    for name, runs in results.items():
        summary = {
            key: _env.median_interval([r[key] for r in runs]).as_dict()
            for key in ("ready_s", "cpu_s")
        }
        _env.emit({"bench": "master_start", "variant": name, "summary": summary}, args.out)


if __name__ == "__main__":
    main()
