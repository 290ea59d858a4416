"""What the local resource manager gives a trial process, with real child processes (a stand-in
program for the trial, as in ``tests/master/test_local_rm.py``): the token over a socket and
nowhere else, none of the master's variables, a private temporary directory that is removed
however the process ends; and what the master hides of itself."""

from __future__ import annotations

import json
import os
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from pedl.exec import TOKEN_FD_ENV, MasterClient, take_token, token_channel
from pedl.master.rm import LocalResourceManager, TrialLaunch, master_variables, trial_environment
from tests.master.test_local_rm import Recorder
from tests.waits import scaled

FAKE_TRIAL = """#!/bin/bash
read -r token <&"$PEDL_TRIAL_TOKEN_FD"
echo "token=$token"
echo "cmdline=$(tr '\\0' ' ' < /proc/$$/cmdline)"
env | sed 's/^/env /'
echo "tmpdir=$TMPDIR mode=$(stat -c %a "$TMPDIR")"
echo "pid=$$"
touch "$TMPDIR/scratch"
if [ "$FAKE_MODE" = sleep ]; then sleep 60; fi
"""
MASTER_SECRETS = {
    "PEDL_DB_URL": "postgresql://postgres:db-secret-1@127.0.0.1/x",
    "pedl_admin_password": "admin-secret-2",  # the settings read any letter case
    "PEDL_PASSWORD": "cli-secret-3",
}


@pytest.fixture
def rm(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> tuple[LocalResourceManager, Recorder, Path]:
    python = tmp_path / "fake-python"
    python.write_text(FAKE_TRIAL)
    python.chmod(python.stat().st_mode | stat.S_IXUSR)
    for name, value in MASTER_SECRETS.items():
        monkeypatch.setenv(name, value)
    temp_root = tmp_path / "tmp"
    temp_root.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temp_root))
    rec = Recorder()
    manager = LocalResourceManager(
        cpu_slots=3, on_exit=rec.on_exit, log_sink=rec.sink, gpus=[], python=str(python)
    )
    return manager, rec, temp_root


def output(rec: Recorder, trial_id: int) -> list[str]:
    return [line for stream, line in rec.lines.get(trial_id, []) if stream == "stdout"]


def value(rec: Recorder, trial_id: int, key: str) -> str:
    return next(line for line in output(rec, trial_id) if line.startswith(key)).split("=", 1)[1]


def test_the_token_comes_over_a_socket_and_no_master_secret_comes_at_all(
    rm: tuple[LocalResourceManager, Recorder, Path],
) -> None:
    manager, rec, _ = rm
    manager.start(TrialLaunch(1, "http://127.0.0.1:1", "token-of-trial-1", 1, {"OWN": "x"}))
    assert rec.exits.get(timeout=scaled(30)) == (1, 0)
    lines = output(rec, 1)
    assert "token=token-of-trial-1" in lines
    text = "\n".join(lines)
    assert text.count("token-of-trial-1") == 1  # not in its environment or command line
    for secret in MASTER_SECRETS.values():
        assert secret not in text
    assert "env OWN=x" in lines and "env PEDL_TRIAL_ID=1" in lines
    assert any(line.startswith(f"env {TOKEN_FD_ENV}=") for line in lines)
    assert value(rec, 1, "cmdline").split()[-2:] == ["-m", "pedl.exec.trial"]


def test_the_private_directory_goes_however_the_process_ends(
    rm: tuple[LocalResourceManager, Recorder, Path],
) -> None:
    manager, rec, temp_root = rm
    manager.start(TrialLaunch(1, "http://x", "t1", 1))  # ends by itself
    for trial_id in (2, 3):
        manager.start(TrialLaunch(trial_id, "http://x", f"t{trial_id}", 1, {"FAKE_MODE": "sleep"}))
    deadline = time.monotonic() + scaled(30)
    while not all(any(line.startswith("pid=") for line in output(rec, t)) for t in (2, 3)):
        assert time.monotonic() < deadline, rec.lines
        time.sleep(0.05)
    dirs = {t: Path(value(rec, t, "tmpdir").split()[0]) for t in (1, 2, 3)}
    for trial_id, path in dirs.items():
        assert path.parent == temp_root and path.name.startswith(f"pedl-trial-{trial_id}-")
        assert value(rec, trial_id, "tmpdir").endswith("mode=700")
    manager.kill(2)  # the master kills it
    os.killpg(int(value(rec, 3, "pid")), signal.SIGKILL)  # e.g. the kernel's OOM killer
    exits = {rec.exits.get(timeout=scaled(30)) for _ in range(3)}
    assert exits == {(1, 0), (2, -9), (3, -9)}
    assert [p for p in dirs.values() if p.exists()] == []
    assert list(temp_root.iterdir()) == []


def test_a_new_master_removes_what_a_sigkilled_one_left(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gone = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        text=True,
        capture_output=True,
        check=True,
    )
    dead = int(gone.stdout)
    left = [
        tmp_path / f"pedl-trial-3-{dead}-ab12",
        tmp_path / f"pedl-worker-{dead}-cd34",
        tmp_path / f"pedl-trials-{dead}-gh78",  # the trial user's directories (root master)
    ]
    kept = [tmp_path / f"pedl-trial-4-{os.getpid()}-ef56", tmp_path / "pedl-something-else"]
    for path in left + kept:
        (path / "code").mkdir(parents=True)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    rec = Recorder()
    LocalResourceManager(cpu_slots=1, on_exit=rec.on_exit, log_sink=rec.sink, gpus=[])
    assert [p.exists() for p in left + kept] == [False, False, False, True, True]


def test_the_master_s_own_variables_never_reach_a_trial() -> None:
    own = master_variables()
    assert {"PEDL_DB_URL", "PEDL_ADMIN_PASSWORD", "PEDL_PASSWORD", "PEDL_CONFIG_FILE"} <= own
    given = {
        "PEDL_DB_URL": "a",
        "Pedl_Db_Url": "b",
        "PEDL_HOME": "c",
        "PEDL_MASTER_GIVE_UP_SECONDS": "20",  # a trial's own setting
        "AWS_SECRET_ACCESS_KEY": "s3",  # the trials' checkpoint storage may need it
        "PATH": "/bin",
    }
    assert trial_environment(given) == {
        "PEDL_MASTER_GIVE_UP_SECONDS": "20",
        "AWS_SECRET_ACCESS_KEY": "s3",
        "PATH": "/bin",
    }


def test_a_trial_reads_its_token_once_and_then_it_is_gone() -> None:
    with token_channel("tok-7") as channel:
        env = {TOKEN_FD_ENV: str(os.dup(channel.fileno()))}
    fd = int(env[TOKEN_FD_ENV])
    assert take_token(env) == "tok-7"
    assert env == {}
    with pytest.raises(OSError):
        os.fstat(fd)  # closed
    assert take_token({}) is None
    with pytest.raises(ValueError, match="PEDL_TRIAL_TOKEN_FD='x' is not a file descriptor"):
        take_token({TOKEN_FD_ENV: "x"})
    client = MasterClient.from_env({"PEDL_MASTER_URL": "http://m", "PEDL_TRIAL_ID": "7"}, token="t")
    client.close()


PROTECTED = """
import ctypes, json, os, sys
from pedl.master.rm import protect_master_process
protect_master_process()
dumpable = ctypes.CDLL(None).prctl(3, 0, 0, 0, 0)
print(json.dumps({"dumpable": dumpable, "environ": sorted(k for k in os.environ if "PEDL" in k)}))
sys.stdout.flush()
sys.stdin.read()
"""


@pytest.mark.slow  # imports the master in a new process
def test_the_master_hides_its_secrets_from_proc(tmp_path: Path) -> None:
    env = {
        **{k: v for k, v in os.environ.items() if not k.upper().startswith("PEDL_")},
        "PEDL_DB_URL": "postgresql://u:db-secret-1@h/d",
        "PEDL_ADMIN_PASSWORD": "admin-secret-2",
        "PEDL_PORT": "8123",
        "OTHER_URL": "https://u:not-the-master-s@h",
    }
    args = [sys.executable, "-c", PROTECTED, "--db-url", "postgres://u:argv-secret-3@h/d"]
    with subprocess.Popen(
        args, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    ) as proc:
        assert proc.stdout is not None and proc.stdin is not None
        seen = json.loads(proc.stdout.readline())
        cmdline = Path(f"/proc/{proc.pid}/cmdline").read_bytes()
        try:
            environ: bytes | None = Path(f"/proc/{proc.pid}/environ").read_bytes()
        except PermissionError:
            environ = None
        proc.stdin.close()
    assert seen["dumpable"] == 0
    assert seen["environ"] == ["PEDL_PORT"]  # its children inherit no secret
    assert b"argv-secret-3" not in cmdline and b"postgres://u:*************@h/d" in cmdline
    if os.geteuid() != 0:
        assert environ is None  # non-dumpable: only root may read it
        return
    assert environ is not None
    assert b"db-secret-1" not in environ and b"admin-secret-2" not in environ
    assert b"PEDL_DB_URL=postgresql://u:***********@h/d\0" in environ
    assert b"PEDL_PORT=8123\0" in environ and b"OTHER_URL=https://u:not-the-master-s@h" in environ


def test_a_socket_cannot_be_opened_again_through_proc() -> None:
    # Why the token travels over a socket: a pipe's read end can be opened by any process of
    # the same user through /proc/<pid>/fd until the trial has read it.
    with token_channel("tok") as channel:
        with pytest.raises(OSError):
            open(f"/proc/self/fd/{channel.fileno()}", "rb")  # noqa: SIM115
        assert channel.recv(10) == b"tok"
        assert isinstance(channel, socket.socket)
