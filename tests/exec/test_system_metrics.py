"""The trial process's system metrics sampler, with the real psutil on this machine: the
interval's bounds, batches of samples, a last sample at the end, failures that drop a batch
without stopping the sampling."""

from __future__ import annotations

import logging
import subprocess
import sys
import threading
import time
from datetime import datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pedl.exec._system_metrics import (
    DEFAULT_INTERVAL_S,
    ENV_INTERVAL,
    GpuProbe,
    Sample,
    SystemMetricsReporter,
    SystemSampler,
    _visible_gpus,
    sampling_interval,
)

MACHINE_METRICS = {
    "cpu_percent",
    "process_cpu_percent",
    "memory_percent",
    "process_rss_bytes",
    "disk_read_bytes_per_s",
    "disk_write_bytes_per_s",
    "net_sent_bytes_per_s",
    "net_recv_bytes_per_s",
}


def test_the_interval_defaults_turns_off_and_is_bounded() -> None:
    assert sampling_interval({}) == DEFAULT_INTERVAL_S
    assert sampling_interval({ENV_INTERVAL: "0"}) == 0
    assert sampling_interval({ENV_INTERVAL: " 2.5 "}) == 2.5
    for bad in ("0.5", "601", "-1", "soon", "nan"):
        with pytest.raises(ValueError, match=ENV_INTERVAL):
            sampling_interval({ENV_INTERVAL: bad})


@given(st.floats(allow_nan=False))
def test_any_interval_is_refused_or_within_bounds(value: float) -> None:
    try:
        interval = sampling_interval({ENV_INTERVAL: repr(value)})
    except ValueError:
        assert not (value == 0 or 1 <= value <= 600)
    else:
        assert interval == 0 or 1 <= interval <= 600


def test_a_sample_holds_the_machine_and_process_use() -> None:
    sampler = SystemSampler()
    data = bytearray(32 * 1024 * 1024)  # the process holds at least this much
    first = sampler.sample()
    time.sleep(0.2)
    second = sampler.sample()
    sampler.close()
    assert set(second["metrics"]) >= MACHINE_METRICS
    assert datetime.fromisoformat(second["time"]) > datetime.fromisoformat(first["time"])
    assert 0 <= second["metrics"]["cpu_percent"] <= 100
    assert second["metrics"]["process_rss_bytes"] >= len(data)
    assert all(v >= 0 for v in second["metrics"].values())


def test_visible_gpus_follow_cuda_visible_devices() -> None:
    assert _visible_gpus({}, 4) == [0, 1, 2, 3]
    assert _visible_gpus({"CUDA_VISIBLE_DEVICES": "2,0"}, 4) == [2, 0]
    assert _visible_gpus({"CUDA_VISIBLE_DEVICES": ""}, 4) == []
    assert _visible_gpus({"CUDA_VISIBLE_DEVICES": "1,7"}, 4) == [1]
    assert _visible_gpus({"CUDA_VISIBLE_DEVICES": "GPU-1a2b"}, 2) == [0, 1]


def test_without_a_gpu_library_or_device_there_are_no_gpu_metrics() -> None:
    probe = GpuProbe()
    if probe.count:
        pytest.skip("this machine has an NVIDIA GPU and library")
    assert probe.sample() == {}
    probe.close()


def test_samples_go_out_in_batches_and_the_rest_at_the_end() -> None:
    batches: list[list[Sample]] = []
    two = threading.Event()

    def send(samples: list[Sample]) -> None:
        batches.append(samples)
        if len(batches) == 2:
            two.set()

    reporter = SystemMetricsReporter(send, 0.02, batch_samples=3)
    assert two.wait(10)
    reporter.stop()
    reporter.stop()  # once
    assert [len(b) for b in batches[:2]] == [3, 3]
    assert 1 <= len(batches[-1]) <= 3  # what was left, and a last sample
    times = [datetime.fromisoformat(s["time"]) for b in batches for s in b]
    assert times == sorted(times) and len(set(times)) == len(times)
    assert not any(t.name == "pedl-system-metrics" for t in threading.enumerate())


def test_a_failing_send_drops_its_batch_logs_once_and_sampling_goes_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    calls: list[int] = []
    three = threading.Event()

    def send(samples: list[Sample]) -> None:
        calls.append(len(samples))
        if len(calls) == 3:
            three.set()
        raise RuntimeError("the master is away")

    with caplog.at_level(logging.WARNING, logger="pedl.exec"):
        reporter = SystemMetricsReporter(send, 0.02, batch_samples=2)
        assert three.wait(10)
        reporter.stop()
    assert calls[:3] == [2, 2, 2]  # each batch dropped, not piled up
    warnings = [r for r in caplog.records if "system metrics" in r.getMessage()]
    assert len(warnings) == 1 and "the master is away" in warnings[0].getMessage()


def test_a_reporter_refuses_a_wrong_interval_or_batch() -> None:
    with pytest.raises(ValueError, match="interval"):
        SystemMetricsReporter(lambda _: None, 0)
    with pytest.raises(ValueError, match="batch_samples"):
        SystemMetricsReporter(lambda _: None, 1, batch_samples=0)


def test_the_process_cpu_counts_its_children() -> None:
    sampler = SystemSampler()
    busy = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        sampler.sample()  # starts the child's count
        time.sleep(1.0)
        during = sampler.sample()["metrics"]["process_cpu_percent"]
    finally:
        busy.kill()
        busy.wait()
        sampler.close()
    assert during > 5  # a spinning child, even on a busy machine
