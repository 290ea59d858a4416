"""Trials as their own OS user (``trial_user``, README's Security): a master running as root
(as CI does) runs its trials as ``nobody``, which cannot read the master's home, database or
settings file, owns a private HOME and TMPDIR, writes its checkpoints into a storage directory
it cannot list, and cannot change a checkpoint once it is sealed; a master that is not root
says once that its trials run as its own user.

The rest of the suite runs its masters with ``PEDL_TRIAL_USER=''`` (see tests/conftest.py);
these tests set the trial user themselves. Switching users needs root: they are skipped
elsewhere (CI runs as root)."""

from __future__ import annotations

import json
import os
import pwd
import shutil
import stat
import subprocess
import sys
import sysconfig
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from pedl.master import MasterSettings
from pedl.master.rm import LocalResourceManager, TrialLaunch, TrialUser, trial_user_for
from tests.master.e2e import MasterProcess, create_experiment, logs, trials, wait_for
from tests.master.test_local_rm import Recorder
from tests.waits import scaled

needs_root = pytest.mark.skipif(
    os.geteuid() != 0, reason="only root can run processes as another user (CI runs as root)"
)
NOBODY = pwd.getpwnam("nobody")
MODEL_DIR = Path(__file__).parent / "trial_user_model"


@pytest.fixture
def open_dir() -> Iterator[Path]:
    """A directory every user may enter (mode 0755, root's), outside pytest's temporary
    directories (root's, 0700): where a test puts what the trial user must reach."""
    path = Path(tempfile.mkdtemp(prefix="pedl-test-trial-user-"))
    path.chmod(0o755)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="module")
def trial_python() -> Iterator[str]:
    """A Python ``nobody`` can run, with this environment's packages: the tests' own where
    ``nobody`` can run it; else (a Python under root's home, as pyenv installs it, is out of
    ``nobody``'s reach, README says so) the same interpreter copied, as hard links where it
    can, out of root's home into a directory readable by all, without its site-packages and
    tests, whose site-packages adds this environment's, started by a script that points the
    loader at its copy of libpython."""
    try:
        TrialUser.named("nobody").check_runnable(sys.executable)
    except PermissionError:
        pass
    else:
        yield sys.executable
        return
    directory = Path(tempfile.mkdtemp(prefix="pedl-test-python-"))
    directory.chmod(0o755)
    prefix = directory / "prefix"
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    skip = shutil.ignore_patterns("site-packages", "test", "idlelib", "tkinter", "ensurepip")

    def link(src: str, dst: str) -> None:
        try:
            os.link(src, dst)
        except OSError:  # another file system
            shutil.copy2(src, dst)

    try:
        shutil.copytree(sys.base_prefix, prefix, symlinks=True, ignore=skip, copy_function=link)
        site_packages = prefix / "lib" / version / "site-packages"
        site_packages.mkdir()
        ours = sysconfig.get_path("purelib")
        (site_packages / "pedl-tests.pth").write_text(f"import site; site.addsitedir({ours!r})\n")
        python = directory / "python"
        python.write_text(
            f'#!/bin/sh\nLD_LIBRARY_PATH={prefix / "lib"} exec {prefix / "bin" / version} "$@"\n'
        )
        python.chmod(0o755)
        yield str(python)
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def nobodys(path: Path) -> Path:
    """Make ``path`` a directory of ``nobody`` (0700)."""
    path.mkdir(mode=0o700)
    os.chown(path, NOBODY.pw_uid, NOBODY.pw_gid)
    return path


FAKE_TRIAL = """#!{python}
import json, os, pwd, stat
from pathlib import Path

def attempt(action):
    try:
        action()
    except Exception as err:
        return type(err).__name__
    return "ok"

storage = Path(os.environ["CKPT"])
home, tmpdir = Path(os.environ["HOME"]), Path(os.environ["TMPDIR"])
(tmpdir / "scratch").write_text("mine")
(home / ".keras").mkdir()
if os.environ.get("WRITE_CHECKPOINTS"):
    for name in ("c1", "c2"):
        written = storage / (".tmp-" + name)
        written.mkdir()
        (written / "weights").write_text("w")
        written.rename(storage / name)
    # a trap for the sealing: a link out of the checkpoint to a file of the trial user's
    os.symlink(os.environ["TRAP"], storage / "c2" / "trap")
    (storage / ".tmp-c3").mkdir()  # being written: not sealed
print(json.dumps({{
    "uid": os.getuid(), "gid": os.getgid(), "groups": os.getgroups(),
    "user": pwd.getpwuid(os.getuid()).pw_name, "umask": os.umask(0),
    "home": str(home), "tmpdir": str(tmpdir),
    "owners": [os.stat(p).st_uid for p in (home, tmpdir)],
    "tmpdir_mode": stat.S_IMODE(tmpdir.stat().st_mode),
    "read_secret": attempt(lambda: open(os.environ["SECRET"]).read()),
    "list_storage": attempt(lambda: os.listdir(storage)),
    "list_root": attempt(lambda: os.listdir(tmpdir.parent)),
}}), flush=True)
"""


@pytest.fixture
def fake_trial(open_dir: Path, trial_python: str) -> str:
    path = open_dir / "fake-python"
    path.write_text(FAKE_TRIAL.format(python=trial_python))
    path.chmod(0o755)
    return str(path)


def report(rec: Recorder, trial_id: int) -> dict[str, Any]:
    lines = [line for stream, line in rec.lines.get(trial_id, []) if stream == "stdout"]
    assert lines, rec.lines
    result: dict[str, Any] = json.loads(lines[-1])
    return result


@needs_root
def test_a_trial_process_runs_as_the_trial_user_and_its_checkpoints_are_sealed(
    tmp_path: Path, open_dir: Path, fake_trial: str
) -> None:
    secret = tmp_path / "pedl.db"  # in pytest's directory (root's, 0700), as the master's home
    secret.write_text("the master's database")
    storage = open_dir / "checkpoints"
    trap = nobodys(open_dir / "nobodys") / "file"
    trap.write_text("the trial user's")
    os.chown(trap, NOBODY.pw_uid, NOBODY.pw_gid)
    trap.chmod(0o600)
    rec = Recorder()
    user = TrialUser.named("nobody")
    manager = LocalResourceManager(
        cpu_slots=2,
        on_exit=rec.on_exit,
        log_sink=rec.sink,
        gpus=[],
        python=fake_trial,
        trial_user=user,
    )
    env = {"CKPT": str(storage), "SECRET": str(secret), "TRAP": str(trap)}
    try:
        manager.start(
            TrialLaunch(
                1,
                "http://127.0.0.1:1",
                "t1",
                1,
                {**env, "WRITE_CHECKPOINTS": "1"},
                checkpoint_dir=str(storage),
            )
        )
        assert rec.exits.get(timeout=scaled(30)) == (1, 0), rec.lines
        seen = report(rec, 1)
        assert (seen["uid"], seen["gid"], seen["user"]) == (NOBODY.pw_uid, NOBODY.pw_gid, "nobody")
        assert seen["groups"] == [] and seen["umask"] == 0o077
        assert seen["owners"] == [NOBODY.pw_uid, NOBODY.pw_uid] and seen["tmpdir_mode"] == 0o700
        assert Path(seen["home"]) == Path(seen["tmpdir"]) / "home"
        assert seen["read_secret"] == "PermissionError"
        assert seen["list_storage"] == "PermissionError"  # other trials' checkpoints: unseen
        root = Path(seen["tmpdir"]).parent  # the master's directory of private directories
        assert root.name.startswith(f"pedl-trials-{os.getpid()}-")
        assert seen["list_root"] == "PermissionError"
        assert (root.stat().st_uid, stat.S_IMODE(root.stat().st_mode)) == (0, 0o711)
        assert not Path(seen["tmpdir"]).exists()  # removed once reaped

        # The storage is the master's (1733); the finished checkpoints are sealed, the one
        # being written is not, and the sealing followed no link.
        assert stat.S_IMODE(storage.stat().st_mode) == 0o1733 and storage.stat().st_uid == 0
        for name in ("c1", "c2"):
            assert (storage / name).stat().st_uid == 0
            assert stat.S_IMODE((storage / name).stat().st_mode) == 0o755
            weights = (storage / name / "weights").stat()
            assert (weights.st_uid, stat.S_IMODE(weights.st_mode)) == (0, 0o644)
        assert (storage / ".tmp-c3").stat().st_uid == NOBODY.pw_uid
        assert (trap.stat().st_uid, stat.S_IMODE(trap.stat().st_mode)) == (NOBODY.pw_uid, 0o600)

        # A checkpoint directory the trial user cannot reach: the start fails, naming the
        # settings to change; nothing runs.
        hidden = tmp_path / "checkpoints"
        with pytest.raises(PermissionError) as refused:
            manager.start(TrialLaunch(2, "http://x", "t2", 1, env, checkpoint_dir=str(hidden)))
        message = str(refused.value)
        barrier = next(p for p in reversed(hidden.parents) if not p.stat().st_mode & 0o001)
        assert "trials run as nobody (the master's trial_user)" in message
        assert (
            f"cannot reach the checkpoint storage {hidden}: it may not enter {barrier}" in message
        )
        for setting in ("checkpoint_storage.host_path", "PEDL_CHECKPOINT_DIR", "PEDL_TRIAL_USER"):
            assert setting in message
        assert manager.running() == set() and not hidden.exists()

        # A symbolic link of the trial user's on the way (a trial could have made it, to have
        # the master open up another directory): refused, not followed.
        elsewhere = open_dir / "elsewhere"
        elsewhere.mkdir(mode=0o755)
        link = open_dir / "link"
        link.symlink_to(elsewhere)
        os.lchown(link, NOBODY.pw_uid, NOBODY.pw_gid)
        for via in (link, link / "sub"):
            with pytest.raises(PermissionError, match="a symbolic link of the trial user nobody"):
                manager.start(TrialLaunch(3, "http://x", "t3", 1, env, checkpoint_dir=str(via)))
        assert stat.S_IMODE(elsewhere.stat().st_mode) == 0o755 and not (elsewhere / "sub").exists()
    finally:
        manager.shutdown()
    assert not root.exists()


@needs_root
def test_a_temporary_directory_out_of_the_trial_user_s_reach_refuses_the_start(
    tmp_path: Path, fake_trial: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # pytest's: root's, 0700
    rec = Recorder()
    manager = LocalResourceManager(
        cpu_slots=1,
        on_exit=rec.on_exit,
        log_sink=rec.sink,
        gpus=[],
        python=fake_trial,
        trial_user=TrialUser.named("nobody"),
    )
    try:
        with pytest.raises(PermissionError, match="cannot reach the master's temporary direc"):
            manager.start(TrialLaunch(1, "http://x", "t1", 1, {"CKPT": "/nonexistent"}))
        assert manager.running() == set() and list(tmp_path.iterdir()) == []
    finally:
        manager.shutdown()


def test_the_trial_user_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PEDL_TRIAL_USER")
    assert MasterSettings().trial_user == "nobody"  # the default
    monkeypatch.setenv("PEDL_TRIAL_USER", "")
    assert MasterSettings().trial_user == ""  # the opt-out: trials run as the master's user
    assert trial_user_for(MasterSettings()) is None
    with pytest.raises(ValueError, match=r"'pedl-no-such-user' \(PEDL_TRIAL_USER\) is no user"):
        TrialUser.named("pedl-no-such-user")
    with pytest.raises(ValueError, match="is root"):
        TrialUser.named("root")
    if os.geteuid() == 0:  # a master that cannot switch users does not look the user up
        with pytest.raises(ValidationError, match="'pedl-no-such-user' is no user"):
            MasterSettings(trial_user="pedl-no-such-user")


NOT_ROOT = """
import logging
from pedl.master import MasterSettings
from pedl.master.rm import trial_user_for
logging.basicConfig(level=logging.INFO, format="%(levelname)s %(message)s")
print("user:", trial_user_for(MasterSettings(home="/nonexistent", trial_user="nobody")))
"""


@needs_root
def test_a_master_that_is_not_root_says_that_trials_run_as_its_user(
    open_dir: Path, trial_python: str
) -> None:
    done = subprocess.run(
        [trial_python, "-c", NOT_ROOT],
        user=NOBODY.pw_uid,
        group=NOBODY.pw_gid,
        extra_groups=[],
        cwd=open_dir,
        env={"PATH": os.environ.get("PATH", ""), "HOME": str(open_dir)},
        capture_output=True,
        text=True,
        timeout=scaled(60),
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "user: None"
    warnings = [line for line in done.stderr.splitlines() if line.startswith("WARNING")]
    assert len(warnings) == 1, done.stderr
    assert "trials run as nobody, the master's own user" in warnings[0]
    assert "only a master running as root can run them as trial_user 'nobody'" in warnings[0]


CONFIG = """
name: trial-user
hyperparameters: {{global_batch_size: 16}}
searcher: {{name: single, metric: val_loss, max_length: {{batches: 10}}}}
scheduling_unit: 5
min_validation_period: {{batches: 5}}
min_checkpoint_period: {{batches: 5}}
max_restarts: 1
checkpoint_storage: {{type: shared_fs, host_path: {storage}}}
environment:
  environment_variables:
    - 'PROBE_PATHS={paths}'
    - 'PROBE_STORAGE={storage}'
    - 'PROBE_CHANNEL={channel}'
    - 'PEDL_TRIAL_PYTHON={python}'
"""


def probes(text: str) -> list[dict[str, Any]]:
    return [
        json.loads(line.split("PROBE ", 1)[1]) for line in text.splitlines() if "PROBE {" in line
    ]


@needs_root
@pytest.mark.slow
def test_a_root_master_runs_trials_as_nobody_who_cannot_read_its_files(
    tmp_path: Path, open_dir: Path, trial_python: str
) -> None:
    home = tmp_path / "master"  # in pytest's directory: root's, mode 0700
    home.mkdir()
    settings_file = home / "master.yaml"
    settings_file.write_text("cpu_slots: 2\n")
    storage = open_dir / "checkpoints"
    channel = nobodys(open_dir / "channel")
    paths = {
        "database": str(home / "pedl" / "pedl.db"),
        "settings": str(settings_file),
        "home": str(home / "pedl"),
        "master log": str(home / "master.log"),
    }
    master = MasterProcess(
        home, env={"PEDL_TRIAL_USER": "nobody", "PEDL_CONFIG_FILE": str(settings_file)}
    )
    master.start()
    try:
        config = CONFIG.format(
            storage=storage, paths=json.dumps(paths), channel=channel, python=trial_python
        )
        experiment_id = create_experiment(master.http, config, MODEL_DIR)
        wait_for(master.http, experiment_id, {"COMPLETED"}, timeout=240, master=master)
        (trial,) = trials(master.http, experiment_id)
        text = logs(master.http, trial["id"])
        log = master.log()
    finally:
        master.stop()
    assert (channel / "killed").exists() and trial["restarts"] == 1, text
    first, resumed = probes(text)
    for seen in (first, resumed):
        assert (seen["uid"], seen["euid"], seen["user"]) == (NOBODY.pw_uid, NOBODY.pw_uid, "nobody")
        assert seen["groups"] == []
        assert seen["home_owner"] == seen["tmpdir_owner"] == NOBODY.pw_uid
        assert seen["tmpdir_mode"] == 0o700 and seen["home"] != str(home)
        assert seen["reads"] == {name: "PermissionError" for name in paths}, seen
        assert seen["list_storage"] == "PermissionError"
    # The second run resumed from the first one's checkpoint, which it cannot change.
    assert first["restored_from"] is None and resumed["restored_from"], text
    assert "resuming from checkpoint" in text
    assert resumed["change_restored"] == resumed["rename_restored"] == "PermissionError"
    # Every checkpoint kept (the master's garbage collection removed the first) is the
    # master's now, readable by all, writable by none but root.
    stored = [p for p in storage.iterdir() if not p.name.startswith(".tmp-")]
    assert stored and stat.S_IMODE(storage.stat().st_mode) == 0o1733
    for checkpoint in stored:
        for path in [checkpoint, *checkpoint.rglob("*")]:
            assert path.stat().st_uid == 0 and not path.stat().st_mode & 0o022, path
    assert "trials run as nobody (uid" in log
    assert "which cannot reach checkpoint_dir" in log  # the default, in the master's home


GANG_WORKER = """#!{python}
import json, os
fd = int(os.environ["PEDL_HEARTBEAT_FD"])
os.write(fd, b"x")  # the inherited heartbeat pipe is writable by the trial user
print(json.dumps({{"rank": int(os.environ["PEDL_RANK"]), "uid": os.getuid(),
    "tmpdir": os.environ["TMPDIR"]}}), flush=True)
"""


@needs_root
def test_every_worker_of_a_multi_worker_trial_runs_as_the_trial_user(
    open_dir: Path, trial_python: str
) -> None:
    fake = open_dir / "fake-gang-python"
    fake.write_text(GANG_WORKER.format(python=trial_python))
    fake.chmod(0o755)
    rec = Recorder()
    manager = LocalResourceManager(
        cpu_slots=2,
        on_exit=rec.on_exit,
        log_sink=rec.sink,
        gpus=[],
        python=str(fake),
        trial_user=TrialUser.named("nobody"),
    )
    try:
        manager.start(TrialLaunch(1, "http://127.0.0.1:1", "t1", 2, {}))
        assert rec.exits.get(timeout=scaled(30)) == (1, 0), rec.lines
        seen = [json.loads(line) for stream, line in rec.lines[1] if stream == "stdout"]
        assert sorted(s["rank"] for s in seen) == [0, 1], rec.lines
        assert all(s["uid"] == NOBODY.pw_uid for s in seen)
        assert len({s["tmpdir"] for s in seen}) == 2  # a private directory each
        assert [w.state for w in manager.workers(1)] == ["exited", "exited"]
    finally:
        manager.shutdown()
