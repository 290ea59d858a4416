"""``pedl master``: flags and environment map onto MasterSettings; the command serves the API,
says in one line when its port is taken, and keeps TensorFlow's start-up noise out of trial logs."""

from __future__ import annotations

import os
import queue
import socket
import subprocess
import sys
import time
from pathlib import Path

import click
import httpx
import pytest

from pedl._tf_noise import is_tf_noise
from pedl.cli._master import master_settings
from pedl.master.rm import LocalResourceManager, TrialLaunch
from tests.client.helpers import unused_port
from tests.waits import scaled


def test_flags_map_onto_settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PEDL_CPU_SLOTS", "3")
    monkeypatch.setenv("PEDL_PORT", "9999")
    settings = master_settings(
        host="0.0.0.0", port=8123, db_url=None, home=tmp_path, cpu_slots=None, config_file=None
    )
    assert (settings.host, settings.port, settings.cpu_slots) == ("0.0.0.0", 8123, 3)
    assert settings.home == tmp_path
    assert settings.db_url == f"sqlite:///{tmp_path / 'pedl.db'}"
    config = tmp_path / "master.yaml"
    config.write_text("port: 7000\ncpu_slots: 5\n")
    monkeypatch.delenv("PEDL_PORT")
    from_file = master_settings(config_file=config, db_url="sqlite:///x.db")
    assert (from_file.port, from_file.cpu_slots, from_file.db_url) == (7000, 3, "sqlite:///x.db")


def test_bad_settings_name_the_field(tmp_path: Path) -> None:
    with pytest.raises(click.ClickException, match="cpu_slots"):
        master_settings(cpu_slots=0, home=tmp_path)
    config = tmp_path / "master.yaml"
    config.write_text("colour: blue\n")
    with pytest.raises(click.ClickException, match="colour"):
        master_settings(config_file=config, home=tmp_path)


def test_pedl_master_serves_the_api(tmp_path: Path) -> None:
    port = unused_port()
    env = {**os.environ, "PEDL_HOME": str(tmp_path / "home")}
    with subprocess.Popen(
        [sys.executable, "-m", "pedl", "master", "--port", str(port)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    ) as process:
        try:
            deadline = time.monotonic() + scaled(30)
            while True:
                try:
                    response = httpx.get(f"http://127.0.0.1:{port}/api/v1/health", timeout=1)
                    break
                except httpx.TransportError:
                    assert process.poll() is None, process.communicate()[0]
                    assert time.monotonic() < deadline, "pedl master did not start"
                    time.sleep(0.1)
            assert response.json() == {"status": "ok"}
            assert (tmp_path / "home" / "pedl.db").exists()
        finally:
            process.terminate()
            output = process.communicate(timeout=scaled(20))[0]
    assert "Starting the PEDL master" in output
    assert f"PEDL master listening on http://127.0.0.1:{port}" in output


def test_port_in_use_is_one_line_not_a_traceback(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        env = {**os.environ, "PEDL_HOME": str(tmp_path / "home")}
        result = subprocess.run(
            [sys.executable, "-m", "pedl", "master", "--port", str(port)],
            env=env,
            capture_output=True,
            text=True,
            timeout=scaled(60),
        )
    assert result.returncode == 1, result
    assert result.stderr.splitlines() == [
        f"pedl master: port {port} on 127.0.0.1 is already in use (another master?); "
        "choose another with --port"
    ]
    assert "Traceback" not in result.stdout + result.stderr


TF_STARTUP = [  # TensorFlow 2.21 on a CPU, TF_CPP_MIN_LOG_LEVEL=2 notwithstanding
    "WARNING: All log messages before absl::InitializeLog() is called are written to STDERR",
    "I0000 00:00:1795436155.711112    9806 port.cc:153] oneDNN custom operations are on. You may "
    "see slightly different numerical results due to floating-point round-off errors from "
    "different computation orders. To turn them off, set the environment variable "
    "`TF_ENABLE_ONEDNN_OPTS=0`.",
    "I0000 00:00:1795436156.134598    9806 cpu_feature_guard.cc:227] This TensorFlow binary is "
    "optimized to use available CPU instructions in performance-critical operations.",
    "To enable the following instructions: AVX2 AVX512F FMA, in other operations, rebuild "
    "TensorFlow with the appropriate compiler flags.",
    "W0000 00:00:1795436157.000001    9806 gpu_device.cc:2344] Cannot dlopen some GPU libraries.",
    "E0000 00:00:1795436158.000001    9806 cuda_dnn.cc:8310] Unable to register cuDNN factory: "
    "Attempting to register factory for plugin cuDNN when one has already been registered",
    "2024-05-01 10:00:00.123456: I tensorflow/core/util/port.cc:113] oneDNN custom operations "
    "are on.",
]
TRIAL_OUTPUT = [
    "Epoch 1/5",
    "loss: 0.1235 - accuracy: 0.9877",
    "E0000 00:00:1795436158.000001    9806 some_op.cc:12] INVALID_ARGUMENT: a real error",
    "WARNING:absl:You are saving your model as an HDF5 file",
    "Traceback (most recent call last):",
    '  File "model_def.py", line 3, in build_model',
    "ValueError: To enable the following instructions is not a TF line here",
]


def test_tensorflow_start_up_noise_is_recognised() -> None:
    assert [line for line in TF_STARTUP if not is_tf_noise(line)] == []
    assert [line for line in TRIAL_OUTPUT if is_tf_noise(line)] == []


FAKE_TF_TRIAL = """#!/bin/sh
while IFS= read -r line; do echo "$line" >&2; done <<'EOF_NOISE'
{lines}
EOF_NOISE
echo "tf=$TF_CPP_MIN_LOG_LEVEL"
"""


@pytest.mark.parametrize(("level", "dropped"), [(None, True), ("1", True), ("0", False)])
def test_trial_logs_leave_out_tensorflow_noise(
    tmp_path: Path, level: str | None, dropped: bool
) -> None:
    fake = tmp_path / "fake-python"
    fake.write_text(FAKE_TF_TRIAL.format(lines="\n".join(TF_STARTUP + TRIAL_OUTPUT)))
    fake.chmod(0o755)
    lines: list[tuple[str, str]] = []
    exits: queue.Queue[int] = queue.Queue()
    rm = LocalResourceManager(
        cpu_slots=1,
        on_exit=lambda _, code: exits.put(code),
        log_sink=lambda _, batch: lines.extend((s, m) for s, m, _rank in batch),
        gpus=[],
        python=str(fake),
    )
    env = {} if level is None else {"TF_CPP_MIN_LOG_LEVEL": level}
    rm.start(TrialLaunch(1, "http://127.0.0.1:1", "token", 1, env))
    assert exits.get(timeout=scaled(20)) == 0
    rm.shutdown()
    stderr = [text for stream, text in lines if stream == "stderr"]
    assert stderr == (TRIAL_OUTPUT if dropped else TF_STARTUP + TRIAL_OUTPUT)
    assert ("stdout", f"tf={level or '2'}") in lines
