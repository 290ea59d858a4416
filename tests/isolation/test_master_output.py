"""``pedl master`` never prints the database password (its start-up line names the database)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.waits import scaled


@pytest.mark.slow  # starts pedl master in a new process
def test_the_start_up_line_names_the_database_without_its_password(tmp_path: Path) -> None:
    with socket.socket() as taken:  # a port in use: the master stops right after that line
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        url = "postgresql://postgres:start-up-secret@127.0.0.1:5432/test"
        result = subprocess.run(
            [sys.executable, "-m", "pedl", "master", "--port", str(port), "--db-url", url],
            env={**os.environ, "PEDL_HOME": str(tmp_path / "home")},
            capture_output=True,
            text=True,
            timeout=scaled(60),
        )
    assert result.returncode == 1, result
    assert "postgresql://postgres:***@127.0.0.1:5432/test" in result.stdout
    assert "start-up-secret" not in result.stdout + result.stderr
