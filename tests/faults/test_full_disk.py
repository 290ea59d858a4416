"""A full disk while a checkpoint is written: no checkpoint is left, the trial says why, and
once there is room the run goes on from the last good checkpoint to the undisturbed result.

Checkpoints go to a small tmpfs the test mounts (it needs root, as this machine and CI have;
elsewhere the test is skipped and says why). A local run (``pedl experiment create --local``,
a real process) first measures what one checkpoint takes there; then the tmpfs is filled so
that one checkpoint fits and a second does not, and the disturbed run's second checkpoint
fails with ENOSPC part-way through its files. The trial errors with a message that says the
storage is full, the record and the storage hold the first checkpoint alone, and its restart
(``max_restarts``) waits until the test frees the space, then goes on from the first
checkpoint and ends with the undisturbed run's weights and metric rows.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests import local_record as record
from tests.faults.local_run import MODEL_DIR, pedl, pedl_command, pedl_env
from tests.waits import scaled

pytestmark = pytest.mark.slow

TOTAL_BATCHES = 36
CONFIG = """
name: full-disk
data: {{input: arrays}}
hyperparameters: {{global_batch_size: 16}}
records_per_epoch: 96
searcher:
  name: single
  metric: val_accuracy
  smaller_is_better: false
  max_length: {{batches: {total}}}
scheduling_unit: 6
min_validation_period: {{batches: 6}}
min_checkpoint_period: {{batches: 12}}
checkpoint_policy: none
max_restarts: 1
reproducibility: {{experiment_seed: 11}}
checkpoint_storage: {{type: shared_fs, host_path: {mount}, storage_path: {name}}}
"""
# Checkpoints fall at 12, 24 and 36: the one at 24 finds the disk full.
TMPFS_BYTES = 4 * 1024 * 1024


@pytest.fixture
def tmpfs(tmp_path: Path) -> Iterator[Path]:
    """A 4 MiB tmpfs, unmounted afterwards."""
    mount = tmp_path / "tmpfs"
    mount.mkdir()
    command = ["mount", "-t", "tmpfs", "-o", f"size={TMPFS_BYTES}", "tmpfs", str(mount)]
    try:
        mounted = subprocess.run(command, capture_output=True, text=True, timeout=scaled(30))
    except FileNotFoundError:
        pytest.skip("no mount command here: the full-disk test mounts a small tmpfs")
    if mounted.returncode != 0:
        pytest.skip(
            "the full-disk test mounts a small tmpfs and may not here (it needs root, or "
            f"CAP_SYS_ADMIN): {mounted.stderr.strip()}"
        )
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=True, timeout=scaled(30))


def used_bytes(directory: Path) -> int:
    """The space ``directory``'s files take on their file system (blocks, not lengths)."""
    return sum(p.stat().st_blocks * 512 for p in directory.rglob("*") if p.is_file())


def free_bytes(path: Path) -> int:
    stats = os.statvfs(path)
    return stats.f_bavail * stats.f_frsize


def run_config(tmp: Path, mount: Path, name: str) -> Path:
    config = tmp / f"{name}.yaml"
    config.write_text(CONFIG.format(total=TOTAL_BATCHES, mount=mount, name=name))
    return config


def outcome(experiment: Path, storage: Path) -> tuple[bytes, list[tuple[str, int, Any]]]:
    (trial,) = record.trials(experiment)
    assert trial.state == "COMPLETED", trial.error
    assert trial.latest_checkpoint_uuid is not None
    weights = storage / trial.latest_checkpoint_uuid / "state" / "variables.bin"
    return weights.read_bytes(), record.metric_rows(experiment, trial.id)


def wait_for_restart(experiment: Path, run: subprocess.Popen[bytes]) -> Any:
    """The trial's record once its first attempt failed and the restart was decided."""
    deadline = time.monotonic() + scaled(240)
    while time.monotonic() < deadline:
        assert run.poll() is None, "the run ended before its trial restarted"
        if (experiment / "experiment.db").is_file():
            trials = record.trials(experiment)
            if trials and trials[0].restarts == 1:
                return trials[0]
        time.sleep(0.2)
    raise AssertionError("the trial did not fail and restart")


def test_a_full_disk_during_a_checkpoint_leaves_no_checkpoint_and_the_run_recovers(
    tmp_path: Path, tmpfs: Path
) -> None:
    calm = pedl(
        "experiment",
        "create",
        "--local",
        str(run_config(tmp_path, tmpfs, "calm")),
        str(MODEL_DIR),
        "--output-dir",
        str(tmp_path / "calm"),
        cwd=tmp_path,
    )
    assert calm.returncode == 0, calm.stdout + calm.stderr
    expected = outcome(tmp_path / "calm" / "exp-1", tmpfs / "calm")
    (latest,) = [p for p in (tmpfs / "calm").iterdir() if not p.name.startswith(".")]
    checkpoint_bytes = used_bytes(latest)
    shutil.rmtree(tmpfs / "calm")

    # Room for one checkpoint and a half: the first fits, the second runs out part-way.
    filler = tmpfs / "filler"
    with open(filler, "wb") as f:
        f.write(b"\0" * (free_bytes(tmpfs) - checkpoint_bytes * 3 // 2))
    gate = tmp_path / "space-freed"
    experiment = tmp_path / "full" / "exp-1"
    storage = tmpfs / "full"
    log = tmp_path / "full.log"
    with open(log, "wb") as log_file:
        run = subprocess.Popen(
            pedl_command(
                "experiment",
                "create",
                "--local",
                str(run_config(tmp_path, tmpfs, "full")),
                str(MODEL_DIR),
                "--output-dir",
                str(tmp_path / "full"),
            ),
            cwd=tmp_path,
            env=pedl_env({"PEDL_TEST_WAIT_FOR_FILE": str(gate)}),
            stdout=log_file,
            stderr=subprocess.STDOUT,
        )
    try:
        trial = wait_for_restart(experiment, run)
        # What the user sees: the trial's error says the checkpoint storage is full.
        assert trial.error is not None
        assert trial.error["type"] == "CheckpointStorageFullError", trial.error
        assert "checkpoint storage is full" in trial.error["message"], trial.error
        assert "No space left on device" in trial.error["message"], trial.error
        assert f"writing in {storage}/" in trial.error["message"], trial.error
        # The failed checkpoint left nothing: the first alone is recorded and on disk, and no
        # partial directory (visible or hidden) remains.
        assert record.checkpoint_batches(experiment) == [12]
        assert [p.name for p in storage.iterdir()] == [trial.latest_checkpoint_uuid]

        filler.unlink()
        gate.touch()
        run.wait(timeout=scaled(240))
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()
    output = log.read_text()
    assert run.returncode == 0, output
    # The engine's note of the failed attempt is in the run's log (the terminal shows progress).
    assert "checkpoint storage is full" in (experiment / "experiment.log").read_text()
    assert outcome(experiment, storage) == expected
