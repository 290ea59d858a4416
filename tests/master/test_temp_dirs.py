"""The master's own temporary directories (its read processes' sockets, custom searchers'
working directories) are named after the master's process; a master that starts removes
those of masters that are gone (SIGKILLed, so they could not) and never a running master's.

Real ``pedl master`` processes (SQLite: no database is involved in the temporary
directories), each with one read process, sharing a temporary directory of the test's own.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from pedl.master._temp_dirs import master_temp_dir, remove_dead_owners_dirs
from tests.waits import scaled

from .e2e import MasterProcess

pytestmark = pytest.mark.slow


def _dead_pid() -> int:
    """The id of a process that has exited (and been reaped)."""
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


def _reads_dirs(root: Path, pid: int) -> list[Path]:
    return sorted(root.glob(f"pedl-reads-{pid}-*"))


def _has_socket(directory: Path, timeout_s: float = 60.0) -> bool:
    """Whether a read process's socket appears in ``directory`` within ``timeout_s``: the
    master answers its health check before its read processes have bound (on a loaded
    machine, seconds before)."""
    deadline = time.monotonic() + scaled(timeout_s)
    while not any(directory.glob("*.sock")):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


def test_a_killed_masters_dirs_are_removed_at_the_next_start(tmp_path: Path) -> None:
    # A short TMPDIR of the test's own: under pytest-xdist's tmp_path the read process's
    # socket path would pass the 107 bytes a Unix socket's name may have.
    root = Path(tempfile.mkdtemp(prefix="pedl-td-"))
    env = {"TMPDIR": str(root), "PEDL_READ_PROCESSES": "1"}
    live = MasterProcess(tmp_path / "live", env=env)
    dying = MasterProcess(tmp_path / "dying", env=env)
    restarted = MasterProcess(tmp_path / "dying", env=env)
    try:
        live.start()
        dying.start()
        assert live.proc is not None and dying.proc is not None
        (live_dir,) = _reads_dirs(root, live.proc.pid)
        (dead_dir,) = _reads_dirs(root, dying.proc.pid)
        assert _has_socket(dead_dir)
        searcher_dir = root / f"pedl-searcher-{_dead_pid()}-x1y2z3"
        searcher_dir.mkdir()
        (searcher_dir / "model_def.tar.gz").write_bytes(b"left behind")
        dying.sigkill()
        assert dead_dir.is_dir()  # a SIGKILLed master cannot remove it

        restarted.start()
        assert restarted.proc is not None
        assert not dead_dir.exists()
        assert not searcher_dir.exists()
        assert live_dir.is_dir() and _has_socket(live_dir)
        assert len(_reads_dirs(root, restarted.proc.pid)) == 1
        assert f"removed {dead_dir}" in restarted.log()
        # The running master still serves, its read process included.
        assert live.http.get("/experiments").status_code == 200
    finally:
        for master in (restarted, dying, live):
            master.stop()
    try:
        assert not _reads_dirs(root, live.proc.pid)  # removed at a graceful stop
    finally:
        shutil.rmtree(root, ignore_errors=True)


def test_only_dead_owners_directories_are_removed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr("tempfile.tempdir", None)  # read TMPDIR again
    own = master_temp_dir("reads")
    assert own.parent == tmp_path and own.name.startswith(f"pedl-reads-{os.getpid()}-")
    assert own.stat().st_mode & 0o777 == 0o700
    dead = _dead_pid()
    gone = [tmp_path / f"pedl-reads-{dead}-abc", tmp_path / f"pedl-searcher-{dead}-d_e"]
    kept = [
        tmp_path / f"pedl-reads-{os.getppid()}-abc",  # a running process's
        tmp_path / f"pedl-trial-3-{dead}-abc",  # the resource manager's business
        tmp_path / f"pedl-reads-{dead}",  # not a name master_temp_dir makes
        tmp_path / "pedl-reads-abcdefgh",
    ]
    for path in gone + kept:
        path.mkdir()
    target = tmp_path / "elsewhere"
    target.mkdir()
    (target / "precious").write_text("keep")
    link = tmp_path / f"pedl-reads-{dead}-link"
    link.symlink_to(target)
    assert sorted(remove_dead_owners_dirs()) == sorted(gone)
    assert all(path.is_dir() for path in [own, *kept])
    assert link.is_symlink() and (target / "precious").read_text() == "keep"
    with pytest.raises(ValueError):
        master_temp_dir("other")
