"""The local resource manager: each trial is a child process of the master on this machine."""

from __future__ import annotations

import contextlib
import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from pedl.master.rm._base import ExitHandler, LogSink, ResourceManager, TrialLaunch

TRIAL_MODULE = "pedl.exec.trial"
_FLUSH_SECONDS = 0.2
_FLUSH_LINES = 500
_EOF = None


def detect_gpus() -> list[str]:
    """The GPU ids of this machine (``/dev/nvidiaN``), restricted by ``CUDA_VISIBLE_DEVICES``
    when it is set. No GPU library is imported."""
    found = sorted((p.name[len("nvidia") :] for p in Path("/dev").glob("nvidia[0-9]*")), key=int)
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        wanted = [v.strip() for v in visible.split(",") if v.strip()]
        found = [g for g in found if g in wanted]
    return found


@dataclass
class _Process:
    trial_id: int
    popen: subprocess.Popen[bytes]
    gpus: list[str]
    lines: queue.Queue[tuple[str, str] | None] = field(default_factory=queue.Queue)
    killed: bool = False


class LocalResourceManager(ResourceManager):
    """Runs ``python -m pedl.exec.trial`` per trial, in its own process group.

    Slots are the machine's GPUs (each process sees its own through
    ``CUDA_VISIBLE_DEVICES``) or, without GPUs, ``cpu_slots`` CPU slots. The child's stdout
    and stderr go, line by line, to ``log_sink``; when the process has exited and its output
    is drained, ``on_exit(trial_id, returncode)`` is called; TensorFlow's start-up chatter
    (:func:`is_tf_noise`) is dropped unless the trial's ``TF_CPP_MIN_LOG_LEVEL`` is ``0``. The
    environment is the master's (HOME untouched) plus ``TF_CPP_MIN_LOG_LEVEL=2`` (unless the
    experiment's environment variables set it), the launch's variables, and
    ``PEDL_MASTER_URL``, ``PEDL_TRIAL_ID``, ``PEDL_TRIAL_TOKEN``, ``PEDL_MASTER_PID`` (the
    child exits when its master dies: see :mod:`pedl.exec`).
    """

    def __init__(
        self,
        *,
        cpu_slots: int,
        on_exit: ExitHandler,
        log_sink: LogSink,
        gpus: Sequence[str] | None = None,
        python: str = sys.executable,
    ) -> None:
        self._gpus = list(detect_gpus() if gpus is None else gpus)
        self._total = len(self._gpus) if self._gpus else cpu_slots
        self._free_gpus = list(self._gpus)
        self._on_exit = on_exit
        self._sink = log_sink
        self._python = python
        self._lock = threading.Lock()
        self._procs: dict[int, _Process] = {}
        self._watchers: list[threading.Thread] = []

    @property
    def total_slots(self) -> int:
        return self._total

    @property
    def uses_gpus(self) -> bool:
        return bool(self._gpus)

    def start(self, launch: TrialLaunch) -> None:
        with self._lock:
            if launch.trial_id in self._procs:
                raise RuntimeError(f"trial {launch.trial_id} is already running")
            gpus: list[str] = []
            if self._gpus:
                if launch.slots > len(self._free_gpus):
                    raise RuntimeError(
                        f"trial {launch.trial_id} needs {launch.slots} GPUs, "
                        f"{len(self._free_gpus)} are free"
                    )
                gpus, self._free_gpus = (
                    self._free_gpus[: launch.slots],
                    self._free_gpus[launch.slots :],
                )
            env = {
                **os.environ,
                "TF_CPP_MIN_LOG_LEVEL": "2",
                "PYTHONUNBUFFERED": "1",
                **launch.env,
                "PEDL_MASTER_URL": launch.master_url,
                "PEDL_TRIAL_ID": str(launch.trial_id),
                "PEDL_TRIAL_TOKEN": launch.token,
                "PEDL_MASTER_PID": str(os.getpid()),
            }
            if self._gpus:
                env["CUDA_VISIBLE_DEVICES"] = ",".join(gpus)
            # TF_CPP_MIN_LOG_LEVEL=0 in the experiment's environment asks for every C++ line
            drop_tf_noise = env["TF_CPP_MIN_LOG_LEVEL"] != "0"
            try:
                popen = subprocess.Popen(
                    [self._python, "-m", TRIAL_MODULE],
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    env=env,
                    start_new_session=True,
                )
            except OSError:
                self._free_gpus.extend(gpus)
                raise
            proc = _Process(launch.trial_id, popen, gpus)
            self._procs[launch.trial_id] = proc
        assert popen.stdout is not None and popen.stderr is not None
        readers = [
            threading.Thread(
                target=_read_lines,
                args=(stream, name, proc.lines, drop_tf_noise),
                name=f"pedl-trial-{launch.trial_id}-{name}",
                daemon=True,
            )
            for stream, name in ((popen.stdout, "stdout"), (popen.stderr, "stderr"))
        ]
        for reader in readers:
            reader.start()
        watcher = threading.Thread(
            target=self._watch,
            args=(proc,),
            name=f"pedl-trial-{launch.trial_id}-watch",
            daemon=True,
        )
        watcher.start()
        self._watchers = [w for w in self._watchers if w.is_alive()] + [watcher]

    def _watch(self, proc: _Process) -> None:
        """Ship output in batches until both streams end, then report the exit."""
        open_streams = 2
        batch: list[tuple[str, str]] = []
        deadline = time.monotonic() + _FLUSH_SECONDS
        while open_streams:
            try:
                item = proc.lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                item = ("", "")  # timer tick
            if item is _EOF:
                open_streams -= 1
            elif item[0]:
                batch.append(item)
            if batch and (
                len(batch) >= _FLUSH_LINES or time.monotonic() >= deadline or not open_streams
            ):
                self._ship(proc.trial_id, batch)
                batch = []
            if time.monotonic() >= deadline:
                deadline = time.monotonic() + _FLUSH_SECONDS
        returncode = proc.popen.wait()
        with self._lock:
            self._procs.pop(proc.trial_id, None)
            self._free_gpus.extend(proc.gpus)
            self._free_gpus.sort(key=lambda g: self._gpus.index(g))
        self._on_exit(proc.trial_id, returncode)

    def _ship(self, trial_id: int, batch: list[tuple[str, str]]) -> None:
        try:
            self._sink(trial_id, batch)
        except Exception as err:  # a log write must never take the watcher down
            print(
                f"pedl master: lost {len(batch)} log lines of trial {trial_id}: {err}",
                file=sys.stderr,
            )

    def kill(self, trial_id: int) -> None:
        with self._lock:
            proc = self._procs.get(trial_id)
            if proc is None:
                return
            proc.killed = True
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.popen.pid, signal.SIGKILL)

    def running(self) -> set[int]:
        with self._lock:
            return set(self._procs)

    def shutdown(self) -> None:
        for trial_id in self.running():
            self.kill(trial_id)
        for watcher in list(self._watchers):
            watcher.join(timeout=30)


_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")

_TF_NOISE = re.compile(
    "|".join(
        [
            # absl's info and warning lines (``I0000 00:00:1795436155.711112  9806 port.cc:153]
            # ...``), which TensorFlow's C++ start-up writes before TF_CPP_MIN_LOG_LEVEL applies
            r"^[IW]\d{4} \d\d:\d\d:\d+\.\d+\s+\d+ \S+:\d+\] ",
            # the same in TensorFlow's older format
            r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+: [IW] \S+:\d+\] ",
            r"^WARNING: All log messages before absl::InitializeLog\(\) is called",
            r"oneDNN custom operations are on",
            r"This TensorFlow binary is optimized to use available CPU instructions",
            r"^To enable the following instructions: .* rebuild TensorFlow",
            r"Unable to register cu(DNN|FFT|BLAS) factory",
            r"computation placer already registered",
        ]
    )
)


def is_tf_noise(line: str) -> bool:
    """Whether a line of a trial's output is TensorFlow's C++ start-up chatter (absl info and
    warning lines, oneDNN and CPU-instruction notices, duplicate CUDA plugin registrations),
    which is dropped before it reaches the trial's logs."""
    return _TF_NOISE.search(line) is not None


def _read_lines(
    stream: IO[bytes],
    name: str,
    out: queue.Queue[tuple[str, str] | None],
    drop_tf_noise: bool = True,
) -> None:
    try:
        for raw in iter(stream.readline, b""):
            text = _ANSI.sub("", raw.decode("utf-8", errors="replace").rstrip("\r\n"))
            if not (drop_tf_noise and is_tf_noise(text)):
                out.put((name, text))
    finally:
        stream.close()
        out.put(_EOF)
