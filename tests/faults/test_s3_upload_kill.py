"""Fault injection: SIGKILL a local run while it uploads a checkpoint to S3, then resume it.

The run's S3 traffic goes through a proxy in the test that watches the requests; when the
trial's second checkpoint has had its first file uploaded and the request for its second file
arrives, the proxy SIGKILLs the ``pedl experiment create --local`` process (the trial runs in
it) before that request goes on. So the kill falls genuinely inside the upload, and the bucket
holds a torn checkpoint: some of its files, no manifest. ``pedl experiment resume`` must then
ignore it (it was never recorded, and storage does not count it as a checkpoint), resume from
the first checkpoint, and end with the undisturbed run's weights and metric rows.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from pedl.storage import S3Storage
from tests import local_record as record
from tests.faults.local_run import MODEL_DIR, pedl
from tests.faults.proxy import Proxy
from tests.faults.test_trial_sigkill import CONFIG, TOTAL_BATCHES
from tests.s3_server import ACCESS_KEY, SECRET_KEY, S3Server
from tests.waits import scaled

KILL_IN_CHECKPOINT = 2  # the one at batch 24 (checkpoints fall at 12, 24, 36, 48)
KILL_AT_FILE = 2  # when the request for its second file arrives


class UploadKiller:
    """An :data:`~tests.faults.proxy.Inspector` of the S3 traffic that SIGKILLs process
    ``pid`` when the PUT request for file ``at_file`` of the ``in_checkpoint``-th checkpoint
    under ``prefix`` arrives, instead of passing that request on. Fires once."""

    def __init__(self, prefix: str, in_checkpoint: int, at_file: int) -> None:
        self._put = re.compile(
            rb"PUT /[^/ ]+/" + re.escape(prefix.encode()) + rb"/([0-9a-f-]{36})/(\S+) HTTP/1\.1"
        )
        self._in_checkpoint, self._at_file = in_checkpoint, at_file
        self._lock = threading.Lock()
        self.pid: int | None = None
        self.uploads: dict[str, set[bytes]] = {}
        """The files of each checkpoint whose upload requests passed, by checkpoint id."""
        self.killed_in: str | None = None
        """The checkpoint whose upload the kill cut short."""

    def __call__(self, window: bytes) -> bool:
        """Note the uploads requested in ``window``; kill (once) when the chosen one comes."""
        with self._lock:
            for match in self._put.finditer(window):
                checkpoint, file = match.group(1).decode(), match.group(2)
                files = self.uploads.setdefault(checkpoint, set())
                nth = list(self.uploads).index(checkpoint) + 1
                if (
                    self.pid is not None
                    and self.killed_in is None
                    and nth == self._in_checkpoint
                    and file not in files
                    and len(files) + 1 == self._at_file
                ):
                    os.kill(self.pid, signal.SIGKILL)
                    self.killed_in = checkpoint
                    return True
                files.add(file)
        return False


def s3_config(bucket: str, prefix: str, endpoint_url: str, *, keys: bool) -> str:
    """The kill-and-resume config with a Determined-style S3 checkpoint_storage section (with
    the keys in it, or without: then boto3 reads them from the environment)."""
    storage = (
        f"  type: s3\n  bucket: {bucket}\n  prefix: {prefix}\n  endpoint_url: {endpoint_url}\n"
    )
    if keys:
        storage += f"  access_key: {ACCESS_KEY}\n  secret_key: {SECRET_KEY}\n"
    return CONFIG.format(kind="arrays", total=TOTAL_BATCHES) + "checkpoint_storage:\n" + storage


def start(tmp: Path, name: str, config: str) -> subprocess.Popen[str]:
    """``pedl experiment create --local`` of ``config`` in ``tmp/name``, started (output piped)."""
    path = tmp / f"{name}.yaml"
    path.write_text(config)
    args = ["create", "--local", str(path), str(MODEL_DIR), "--output-dir", str(tmp / name)]
    return subprocess.Popen(
        [sys.executable, "-m", "pedl", "experiment", *args],
        cwd=tmp,
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def outcome(
    experiment: Path, storage: S3Storage
) -> tuple[bytes, list[tuple[str, int, dict[str, float]]]]:
    (trial,) = record.trials(experiment)
    assert trial.state == "COMPLETED", trial.error
    assert trial.latest_checkpoint_uuid is not None
    with storage.restore_path(trial.latest_checkpoint_uuid) as checkpoint:
        weights = (checkpoint / "state" / "variables.bin").read_bytes()
    return weights, record.metric_rows(experiment, trial.id)


@pytest.mark.slow
def test_sigkill_during_a_checkpoint_upload_to_s3_then_resume(
    tmp_path: Path, s3_server: S3Server
) -> None:
    bucket = s3_server.new_bucket()
    storage = S3Storage(bucket, "torn", endpoint_url=s3_server.endpoint_url)
    killer = UploadKiller("torn", KILL_IN_CHECKPOINT, KILL_AT_FILE)
    port = urlsplit(s3_server.endpoint_url).port
    assert port is not None
    with Proxy(port, inspect=killer) as proxy:
        # The undisturbed run and the one to kill side by side (each spends most of its time
        # importing TensorFlow).
        url = s3_server.endpoint_url
        undisturbed = start(tmp_path, "baseline", s3_config(bucket, "baseline", url, keys=True))
        killed = start(tmp_path, "torn", s3_config(bucket, "torn", proxy.url, keys=False))
        killer.pid = killed.pid
        output, _ = undisturbed.communicate(timeout=scaled(300))
        assert undisturbed.returncode == 0, output
        # The summary says where the best checkpoint is: its S3 URL.
        (best,) = record.trials(tmp_path / "baseline" / "exp-1")
        assert f"checkpoint: s3://{bucket}/baseline/{best.best_checkpoint_uuid}/" in output
        output, _ = killed.communicate(timeout=scaled(300))
        assert killed.returncode == -signal.SIGKILL, f"not killed during an upload:\n{output}"
        torn = killer.killed_in
        assert torn is not None
        # The kill fell inside the upload: the bucket holds part of that checkpoint, no manifest.
        experiment = tmp_path / "torn" / "exp-1"
        assert len(s3_server.keys(bucket, f"torn/{torn}/")) == KILL_AT_FILE - 1
        assert not storage.exists(torn)
        assert record.checkpoint_batches(experiment) == [12]
        (trial,) = record.trials(experiment)
        first = trial.latest_checkpoint_uuid
        assert first is not None and first != torn and storage.exists(first)

        log = experiment / "experiment.log"  # the run's log: the terminal shows progress only
        before = log.stat().st_size if log.exists() else 0
        resumed = pedl("experiment", "resume", str(experiment), cwd=tmp_path)
        assert resumed.returncode == 0, resumed.stdout + resumed.stderr
        with log.open() as file:
            file.seek(before)
            resume_log = file.read()
        assert f"resumed from checkpoint {first} at batch 12" in resume_log
    assert torn not in resume_log
    baseline = tmp_path / "baseline" / "exp-1"
    assert record.checkpoint_batches(experiment) == record.checkpoint_batches(baseline)
    expected = outcome(baseline, S3Storage(bucket, "baseline", endpoint_url=url))
    assert outcome(experiment, storage) == expected
