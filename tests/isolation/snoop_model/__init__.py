"""The model of the isolation tests: a tiny Keras trial whose ``build_model`` looks for secrets
it must not find, while another trial of its experiment runs beside it.

``$SNOOP_DIR`` (from the experiment's environment variables) is the test's channel:
``needles.json`` names the secrets to look for (``{"name": "value"}``, written by the test);
each trial writes its own token (found in its own process, where it must be) to
``token-<trial id>``, waits until every trial of the experiment (``$SNOOP_TRIALS``) has, adds
their tokens to the needles, and searches:

- its own environment (``os.environ`` and ``/proc/self/environ``) and command line;
- ``/proc/<parent>/environ`` and ``cmdline`` (the master, or the warm worker's master) and
  every other process's, where readable (``unreadable`` lists those that were not);
- every file under its ``TMPDIR``, its working directory and ``$HOME`` (the master's home,
  where the master's log is).

It writes what it found (``[[where, needle name], ...]``) and what it could not read to
``report-<trial id>.json``, with its pid and ``TMPDIR``, then waits until every trial has
reported, so that all of them run while each searches. The trial whose hyperparameter
``victim`` is true then SIGKILLs its own process, once (the next run of that trial only
trains).
"""

import gc
import json
import os
import signal
import time
from pathlib import Path
from typing import Any

import keras
import numpy as np

from pedl.keras import TFKerasTrial

_WAIT_SECONDS = 120.0
_MAX_FILE = 1 << 20


def own_token() -> str:
    """This trial's token, from its own MasterClient (its process holds it, as it must)."""
    for obj in gc.get_objects():
        if type(obj).__name__ == "MasterClient":
            header: str = obj._http.headers["authorization"]
            return header.removeprefix("Bearer ")
    raise AssertionError("no MasterClient in this process")


def wait_for_files(directory: Path, pattern: str, count: int) -> list[Path]:
    deadline = time.monotonic() + _WAIT_SECONDS
    while len(found := sorted(directory.glob(pattern))) < count:
        assert time.monotonic() < deadline, f"only {len(found)} of {count} {pattern}"
        time.sleep(0.05)
    return found


def read(path: Path, unreadable: list[str]) -> bytes:
    try:
        return path.read_bytes()[:_MAX_FILE]
    except OSError as err:
        unreadable.append(f"{path}: {type(err).__name__}")
        return b""


def search(needles: dict[str, str], tmpdir: Path) -> tuple[list[list[str]], list[str]]:
    unreadable: list[str] = []
    places: dict[str, bytes] = {
        "os.environ": "\0".join(f"{k}={v}" for k, v in os.environ.items()).encode(),
        "/proc/self/environ": read(Path("/proc/self/environ"), unreadable),
        "/proc/self/cmdline": read(Path("/proc/self/cmdline"), unreadable),
    }
    parent = os.getppid()
    for what in ("environ", "cmdline"):
        places[f"/proc/<parent>/{what}"] = read(Path(f"/proc/{parent}/{what}"), unreadable)
    for proc in Path("/proc").glob("[0-9]*"):
        if int(proc.name) in (os.getpid(), parent):
            continue
        for what in ("environ", "cmdline"):
            with_errors: list[str] = []
            places[str(proc / what)] = read(proc / what, with_errors)
            unreadable += [e for e in with_errors if "PermissionError" in e]
    for root in {tmpdir, Path.cwd(), Path.home()}:
        for path in root.rglob("*"):
            if path.is_file() and not path.is_symlink():
                places[f"file:{path}"] = read(path, unreadable)
    found = [
        [where, name]
        for where, data in places.items()
        for name, needle in needles.items()
        if needle.encode() in data
    ]
    return found, unreadable


def blobs(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 4)).astype("float32")
    return x, (x[:, 0] + x[:, 1] > 0).astype("int32")


class SnoopTrial(TFKerasTrial):
    def build_model(self) -> keras.Model:
        trial_id = self.context.get_trial_id()
        channel = Path(os.environ["SNOOP_DIR"])
        victim = bool(self.context.get_hparam("victim"))
        marker = channel / f"killed-{trial_id}"
        if not marker.exists():
            self.snoop(channel, trial_id)
            if victim:
                marker.write_text(os.environ["TMPDIR"])
                os.kill(os.getpid(), signal.SIGKILL)
        model = self.context.wrap_model(
            keras.Sequential([keras.Input((4,)), keras.layers.Dense(2, activation="softmax")])
        )
        model.compile(
            optimizer=self.context.wrap_optimizer(keras.optimizers.SGD(0.1)),
            loss="sparse_categorical_crossentropy",
        )
        return model

    def snoop(self, channel: Path, trial_id: int) -> None:
        count = int(os.environ["SNOOP_TRIALS"])
        (channel / f"token-{trial_id}.tmp").write_text(own_token())
        (channel / f"token-{trial_id}.tmp").rename(channel / f"token-{trial_id}")
        needles = json.loads((channel / "needles.json").read_text())
        for path in wait_for_files(channel, "token-*[0-9]", count):
            other = int(path.name.removeprefix("token-"))
            if other != trial_id:
                needles[f"token of trial {other}"] = path.read_text()
        tmpdir = Path(os.environ["TMPDIR"])
        found, unreadable = search(needles, tmpdir)
        report = {
            "pid": os.getpid(),
            "parent": os.getppid(),
            "tmpdir": str(tmpdir),
            "tmpdir_mode": tmpdir.stat().st_mode & 0o777,
            "searched_for": sorted(needles),
            "found": found,
            "unreadable": unreadable,
            "token_variables": sorted(k for k in os.environ if "TOKEN" in k),
            "api_key": os.environ.get("MY_API_KEY"),
        }
        (channel / f"report-{trial_id}.tmp").write_text(json.dumps(report))
        (channel / f"report-{trial_id}.tmp").rename(channel / f"report-{trial_id}.json")
        wait_for_files(channel, "report-*.json", count)

    def build_training_data_loader(self) -> Any:
        return blobs(32, 0)

    def build_validation_data_loader(self) -> Any:
        return blobs(16, 1)
