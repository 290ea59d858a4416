"""``pedl master``: flags and environment map onto MasterSettings; the command serves the API."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import click
import httpx
import pytest

from pedl.cli._master import master_settings
from tests.client.helpers import unused_port


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
            deadline = time.monotonic() + 30
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
            output = process.communicate(timeout=20)[0]
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
            timeout=60,
        )
    assert result.returncode == 1, result
    assert result.stderr.splitlines() == [
        f"pedl master: port {port} on 127.0.0.1 is already in use (another master?); "
        "choose another with --port"
    ]
    assert "Traceback" not in result.stdout + result.stderr
