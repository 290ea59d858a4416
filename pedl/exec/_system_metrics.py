"""System metrics of a trial process: CPU, memory, disk, network and GPU use, sampled by a
background thread and reported to the master in batches.

Each process of a trial (every rank of a multi-worker trial) samples every
``PEDL_SYSTEM_METRICS_INTERVAL`` seconds (default 5; from 1 to 600; 0 turns sampling off; an
experiment sets it in ``environment.environment_variables``) and sends what it sampled to
``POST /trials/{id}/system-metrics`` as one batch every :data:`BATCH_SAMPLES` samples (and at
the end of the trial). Each sample is one row: when it was taken, the rank, and these values:

- ``cpu_percent`` (the machine's CPU use), ``process_cpu_percent`` (this process and its
  children; 100 is one core), ``memory_percent`` (the machine's memory in use),
  ``process_rss_bytes`` (this process's resident memory);
- ``disk_read_bytes_per_s``, ``disk_write_bytes_per_s``, ``net_sent_bytes_per_s``,
  ``net_recv_bytes_per_s`` (the machine's, since the previous sample);
- ``gpu<i>_util_percent`` and ``gpu<i>_memory_used_bytes`` per GPU the process may use, from
  NVIDIA's management library (``nvidia-ml-py``), only where it imports and finds a GPU.

Sampling never stops training: a sample that fails, or a batch the master refuses or cannot
take within :data:`SEND_PATIENCE_S`, is dropped (said once in the trial's log).
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psutil

logger = logging.getLogger("pedl.exec")

ENV_INTERVAL = "PEDL_SYSTEM_METRICS_INTERVAL"
DEFAULT_INTERVAL_S = 5.0
MIN_INTERVAL_S = 1.0
MAX_INTERVAL_S = 600.0
BATCH_SAMPLES = 6
"""Samples per report (one request every 30 s at the default interval)."""
SEND_PATIENCE_S = 10.0
"""How long one batch is retried while the master cannot be reached before it is dropped."""

Sample = dict[str, Any]
"""``{"time": ISO 8601 UTC, "metrics": {name: value}}``."""


def sampling_interval(environ: Mapping[str, str] | None = None) -> float:
    """The sampling interval in seconds from ``PEDL_SYSTEM_METRICS_INTERVAL`` (0: off).

    Raises :class:`ValueError` naming the variable for a value that is no number or lies
    outside 1 to 600 (0 aside)."""
    env = os.environ if environ is None else environ
    raw = env.get(ENV_INTERVAL, "").strip()
    if not raw:
        return DEFAULT_INTERVAL_S
    try:
        value = float(raw)
    except ValueError:
        raise ValueError(f"{ENV_INTERVAL} must be a number of seconds, not {raw!r}") from None
    if value == 0:
        return 0.0
    if not MIN_INTERVAL_S <= value <= MAX_INTERVAL_S:
        raise ValueError(
            f"{ENV_INTERVAL} must be 0 (off) or from {MIN_INTERVAL_S:g} to "
            f"{MAX_INTERVAL_S:g} seconds, not {raw}"
        )
    return value


class GpuProbe:
    """GPU utilization and memory from NVIDIA's management library, or nothing where it does
    not import, finds no driver or no GPU (then :attr:`count` is 0)."""

    def __init__(self, environ: Mapping[str, str] | None = None) -> None:
        self._nvml: Any = None
        self._handles: list[tuple[int, Any]] = []
        try:
            import pynvml  # nvidia-ml-py: optional (the tf-gpu extra)

            pynvml.nvmlInit()
            count = int(pynvml.nvmlDeviceGetCount())
            visible = _visible_gpus(os.environ if environ is None else environ, count)
            self._handles = [(i, pynvml.nvmlDeviceGetHandleByIndex(i)) for i in visible]
            self._nvml = pynvml
        except Exception:  # not installed, no driver, no device: no GPU metrics
            self._handles = []

    @property
    def count(self) -> int:
        return len(self._handles)

    def sample(self) -> dict[str, float]:
        values: dict[str, float] = {}
        for index, handle in self._handles:
            with contextlib.suppress(Exception):
                values[f"gpu{index}_util_percent"] = float(
                    self._nvml.nvmlDeviceGetUtilizationRates(handle).gpu
                )
                values[f"gpu{index}_memory_used_bytes"] = float(
                    self._nvml.nvmlDeviceGetMemoryInfo(handle).used
                )
        return values

    def close(self) -> None:
        if self._nvml is not None:
            with contextlib.suppress(Exception):
                self._nvml.nvmlShutdown()
            self._nvml = None
            self._handles = []


def _visible_gpus(environ: Mapping[str, str], count: int) -> list[int]:
    """The device indices ``CUDA_VISIBLE_DEVICES`` allows (all when unset or not indices)."""
    raw = environ.get("CUDA_VISIBLE_DEVICES")
    if raw is None:
        return list(range(count))
    parts = [p.strip() for p in raw.split(",") if p.strip()]
    if not all(p.isdigit() for p in parts):
        return list(range(count))  # UUIDs: NVML's indices cannot be matched cheaply
    return [int(p) for p in parts if int(p) < count]


class SystemSampler:
    """Takes one sample of the machine's and this process's use per :meth:`sample` call;
    rates are over the time since the previous call (the first call's rates are 0)."""

    def __init__(self, gpus: GpuProbe | None = None) -> None:
        self._process = psutil.Process()
        self._gpus = gpus if gpus is not None else GpuProbe()
        self._last: tuple[float, tuple[float, float, float, float]] | None = None
        self._children: dict[int, psutil.Process] = {}
        psutil.cpu_percent(interval=None)  # the first call only starts the count
        self._process.cpu_percent(interval=None)

    def sample(self) -> Sample:
        now = time.monotonic()
        counters = _io_counters()
        rates = (0.0, 0.0, 0.0, 0.0)
        if self._last is not None:
            elapsed = max(now - self._last[0], 1e-6)
            rates = tuple(  # type: ignore[assignment]
                max(0.0, (c - p) / elapsed) for c, p in zip(counters, self._last[1], strict=True)
            )
        self._last = (now, counters)
        metrics: dict[str, float] = {
            "cpu_percent": float(psutil.cpu_percent(interval=None)),
            "process_cpu_percent": self._process_cpu(),
            "memory_percent": float(psutil.virtual_memory().percent),
            "process_rss_bytes": float(self._process.memory_info().rss),
            "disk_read_bytes_per_s": rates[0],
            "disk_write_bytes_per_s": rates[1],
            "net_sent_bytes_per_s": rates[2],
            "net_recv_bytes_per_s": rates[3],
        }
        metrics.update(self._gpus.sample())
        return {"time": datetime.now(UTC).isoformat(), "metrics": metrics}

    def _process_cpu(self) -> float:
        """This process's CPU use and its children's since the previous sample (a child's
        first sample only starts its count)."""
        total = float(self._process.cpu_percent(interval=None))
        children: dict[int, psutil.Process] = {}
        for pid in _child_pids(self._process.pid):
            child = self._children.get(pid)
            with contextlib.suppress(psutil.Error):
                if child is None:
                    child = psutil.Process(pid)
                total += float(child.cpu_percent(interval=None))
                children[pid] = child
        self._children = children
        return total

    def close(self) -> None:
        self._gpus.close()


def _child_pids(pid: int) -> list[int]:
    """The pids of ``pid``'s descendants: from ``/proc/<pid>/task/*/children`` where Linux
    has it (a few files; psutil's ``children`` reads every process's status, ~3 ms of CPU on
    a machine with 200 processes), else from psutil."""
    if not Path(f"/proc/{pid}/task").is_dir():
        with contextlib.suppress(psutil.Error):
            return [c.pid for c in psutil.Process(pid).children(recursive=True)]
        return []
    found: list[int] = []
    todo = [pid]
    while todo:
        parent = todo.pop()
        for path in Path(f"/proc/{parent}/task").glob("*/children"):
            with contextlib.suppress(OSError, ValueError):
                todo.extend(int(child) for child in path.read_text().split())
        if parent != pid:
            found.append(parent)
    return found


def _io_counters() -> tuple[float, float, float, float]:
    disk = psutil.disk_io_counters()
    net = psutil.net_io_counters()
    return (
        float(disk.read_bytes) if disk else 0.0,
        float(disk.write_bytes) if disk else 0.0,
        float(net.bytes_sent) if net else 0.0,
        float(net.bytes_recv) if net else 0.0,
    )


Send = Callable[[list[Sample]], None]
"""Delivers one batch of samples (raises on failure)."""


class SystemMetricsReporter:
    """Samples on a daemon thread every ``interval`` seconds and hands the samples to
    ``send`` every ``batch_samples`` samples; :meth:`stop` takes no more samples and sends
    what is left. A failing ``send`` drops its batch (logged once); sampling goes on."""

    def __init__(
        self,
        send: Send,
        interval: float,
        *,
        batch_samples: int = BATCH_SAMPLES,
        sampler: SystemSampler | None = None,
    ) -> None:
        if interval <= 0:
            raise ValueError(f"interval must be positive, got {interval}")
        if batch_samples < 1:
            raise ValueError(f"batch_samples must be at least 1, got {batch_samples}")
        self._send = send
        self._interval = interval
        self._batch_samples = batch_samples
        self._sampler = sampler if sampler is not None else SystemSampler()
        self._pending: list[Sample] = []
        self._stopped = threading.Event()
        self._warned = False
        self._thread = threading.Thread(target=self._run, name="pedl-system-metrics", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop sampling, take a last sample (so that a trial shorter than the interval has
        one too) and send the samples not yet sent (once; later calls do nothing)."""
        if self._stopped.is_set():
            return
        self._stopped.set()
        self._thread.join()
        self._take()
        self._deliver()
        self._sampler.close()

    def _run(self) -> None:
        while not self._stopped.wait(self._interval):
            self._take()
            if len(self._pending) >= self._batch_samples:
                self._deliver()

    def _take(self) -> None:
        try:
            self._pending.append(self._sampler.sample())
        except Exception as err:
            self._warn(f"a system metrics sample failed: {err}")

    def _deliver(self) -> None:
        batch, self._pending = self._pending, []
        if not batch:
            return
        try:
            self._send(batch)
        except Exception as err:
            self._warn(f"{len(batch)} system metrics samples were not stored: {err}")

    def _warn(self, message: str) -> None:
        if not self._warned:
            self._warned = True
            logger.warning("%s (further problems with system metrics are not logged)", message)


def start_sampling(send: Send) -> SystemMetricsReporter | None:
    """A reporter handing its samples to ``send`` every ``PEDL_SYSTEM_METRICS_INTERVAL``
    seconds (:func:`sampling_interval`); ``None`` when that is 0, or wrong (logged once)."""
    try:
        interval = sampling_interval()
    except ValueError as err:
        logger.warning("no system metrics: %s", err)
        return None
    return SystemMetricsReporter(send, interval) if interval else None
