"""The warm worker's clean-up between trials, in a process of its own (it changes and inspects
process-wide state: the environment, the working directory, threads, child processes)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.waits import scaled

SCRIPT = """
import json, logging, os, subprocess, sys, threading, warnings
import numpy as np
from pedl.exec._worker import ProcessState, clean_up

baseline = ProcessState.take()
before = {"environ": dict(os.environ), "cwd": os.getcwd(), "path": list(sys.path),
          "handlers": list(logging.getLogger().handlers), "warnings": list(warnings.filters)}
# what a trial may change, and the clean-up undoes
os.environ["PEDL_TEST_LEAKED"] = "1"
os.chdir(sys.argv[1])
sys.path.insert(0, "/pedl-test-leaked-path")
logging.getLogger().addHandler(logging.NullHandler())
sys.stdout = open(os.devnull, "w")
warnings.simplefilter("error")
if sys.argv[2] == "leftovers":  # what it cannot undo
    stop = threading.Event()
    threading.Thread(target=stop.wait, name="left-behind", daemon=True).start()
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    np.seterr(all="raise")
problems = clean_up(baseline)
restored = {
    "environ": dict(os.environ) == before["environ"],
    "cwd": os.getcwd() == before["cwd"],
    "path": sys.path == before["path"],
    "handlers": logging.getLogger().handlers == before["handlers"],
    "stdout": sys.stdout is sys.__stdout__,
    "warnings": warnings.filters == before["warnings"],
}
if sys.argv[2] == "leftovers":
    child.kill()
    child.wait()
    stop.set()
print(json.dumps({"problems": problems, "restored": restored}))
"""


def clean_up_after(tmp_path: Path, what: str) -> dict[str, Any]:
    result = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(tmp_path), what],
        capture_output=True,
        text=True,
        timeout=scaled(60),
        check=True,
    )
    out: dict[str, Any] = json.loads(result.stdout.splitlines()[-1])
    return out


def test_the_clean_up_restores_what_a_trial_changed(tmp_path: Path) -> None:
    out = clean_up_after(tmp_path, "nothing else")
    assert out["problems"] == []
    assert out["restored"] == dict.fromkeys(
        ["environ", "cwd", "path", "handlers", "stdout", "warnings"], True
    )


def test_the_clean_up_names_what_it_cannot_undo(tmp_path: Path) -> None:
    out = clean_up_after(tmp_path, "leftovers")
    assert all(out["restored"].values()), out["restored"]
    problems = out["problems"]
    assert len(problems) == 3, problems
    assert problems[0].startswith("child processes it started still run (")
    assert problems[1] == "threads it started still run (left-behind)"
    assert problems[2] == "it changed process-wide framework settings (numpy.geterr)"
