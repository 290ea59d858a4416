"""P6 side by side: builds of the web UI compared load by load, on one machine at once.

Each build (a directory that ``npm run build`` made: ``pedl/master/ui_dist`` of some commit,
copied away) is served by a master of its own, running a copy of this checkout's ``pedl`` with
that build as its ``ui_dist``, over one database loaded before (``p6_ui.py --backend sqlite
--load-only`` prints its ``--db-url``). One headless Chromium loads the visualization tab from
each master in turn, every round in the other order, so that the machine's drift (the 2-vCPU
machines' speed moves by a quarter within minutes) falls on every build alike: ``p6_ui.py``'s
runs, minutes apart, cannot tell a few milliseconds from that drift.

Per load, once the charts are drawn and the page has done what it put off until idle,
Chromium's figures for the page's main thread (``p6_ui.PAGE_METRICS``): its tasks' time
(``TaskDuration``, the measure nearest to P6's traced main-thread time), its CPU time
(``ThreadTime``), and of the tasks JavaScript, layout and style. Printed: each build's medians
and, for each build against the first, the median of the rounds' differences and in how many
rounds it was lower. Every load is a row of ``--out``, with the page's renderer main thread's
CPU and runqueue wait by Linux's schedstat too (``p6_ui.SCHEDSTAT``).

    .venv/bin/python bench/p6_ab.py --db-url sqlite:////tmp/pedl-p6-db-…/pedl.db \\
        --ui before=/tmp/ui-before --ui after=pedl/master/ui_dist --rounds 15 --out F
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
from pathlib import Path
from typing import Any

import _env
from p5_master import MasterProcess
from p6_ui import (
    CHROMIUM,
    CHROMIUM_ARGS,
    PAGE_METRICS,
    SCHEDSTAT,
    _loaded_experiment,
    page_load,
)
from playwright.sync_api import sync_playwright

ROOT = Path(__file__).resolve().parents[1]


def code_with_ui(ui: Path, into: Path) -> Path:
    """A copy of this checkout's ``pedl`` package in ``into`` with ``ui`` as its web UI."""
    shutil.copytree(
        ROOT / "pedl", into / "pedl", ignore=shutil.ignore_patterns("ui_dist", "__pycache__")
    )
    shutil.copytree(ui, into / "pedl" / "master" / "ui_dist")
    return into


def summary(rows: list[dict[str, Any]], names: list[str]) -> dict[str, Any]:
    """Each build's medians; each later build's paired differences against the first."""
    by_build = {name: [row for row in rows if row["build"] == name] for name in names}
    result: dict[str, Any] = {
        "medians_ms": {
            name: {
                metric: round(statistics.median(row[metric] for row in builds), 1)
                for metric in PAGE_METRICS
            }
            for name, builds in by_build.items()
        }
    }
    first = by_build[names[0]]
    for name in names[1:]:
        diffs: dict[str, Any] = {}
        for metric in PAGE_METRICS:
            paired = [b[metric] - a[metric] for a, b in zip(first, by_build[name], strict=True)]
            diffs[metric] = {
                "median_ms": round(statistics.median(paired), 1),
                "lower_in": sum(d < 0 for d in paired),
                "rounds": len(paired),
            }
        result[f"{name}_minus_{names[0]}"] = diffs
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db-url", required=True, help="a database p6_ui.py --load-only kept")
    parser.add_argument(
        "--ui", action="append", required=True, help="NAME=DIR, a built UI (twice or more)"
    )
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--timeout", type=float, default=60)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    builds = dict(item.split("=", 1) for item in args.ui)
    if len(builds) < 2:
        parser.error("--ui NAME=DIR at least twice")
    names = list(builds)
    experiment = _loaded_experiment(args.db_url)
    with tempfile.TemporaryDirectory(prefix="pedl-p6-ab-") as tmp:
        masters = {}
        try:
            for name, ui in builds.items():
                code = code_with_ui(Path(ui), Path(tmp) / name)
                home = Path(tmp) / f"{name}-home"
                masters[name] = MasterProcess(home, args.db_url, spare_workers=0, code=code).start()
            urls = {
                name: f"{m.url}/#/experiments/{experiment}/visualization"
                for name, m in masters.items()
            }
            tokens = {name: m.sign_in() for name, m in masters.items()}
            rows: list[dict[str, Any]] = []
            load = _env.Load.start()
            with sync_playwright() as playwright:
                browser = playwright.chromium.launch(
                    executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS
                )
                try:
                    for name in names:  # warm-up: each master's first answers
                        page_load(browser, urls[name], tokens[name], args.timeout)
                    for round_ in range(args.rounds):
                        for name in names if round_ % 2 == 0 else names[::-1]:
                            sample = page_load(
                                browser, urls[name], tokens[name], args.timeout, settle=True
                            )
                            row = {"build": name, "round": round_}
                            row |= {m: sample[m] for m in (*PAGE_METRICS, *SCHEDSTAT)}
                            rows.append(row)
                            _env.emit({"benchmark": "p6_ab_load", **row}, args.out)
                finally:
                    browser.close()
        finally:
            for master in masters.values():
                master.stop()
    result = {
        "benchmark": "p6_ab",
        "builds": builds,
        "rounds": args.rounds,
        **summary(rows, names),
        **load.stop(),
        "machine": _env.machine(),
    }
    _env.emit(result, args.out)


if __name__ == "__main__":
    main()
