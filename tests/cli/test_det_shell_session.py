"""A shell session written for Determined's ``det`` runs through ``det``, and with ``det``
replaced by ``pedl``, only ``DET_*`` variables set, against a real master process that trains
a tiny model; and ``det experiment create``'s ``--test-mode`` and ``--follow-first-trial`` there."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from pedl.cli import cli
from tests.accounts import ADMIN, ADMIN_PASSWORD
from tests.master.e2e import MODEL_DIR, MasterProcess
from tests.waits import scaled

CONFIG = """\
name: det-habits
hyperparameters: {global_batch_size: 16, lr: 0.01}
searcher: {name: single, metric: val_accuracy, smaller_is_better: false, max_length: {batches: 40}}
scheduling_unit: 10
min_validation_period: {batches: 10}
min_checkpoint_period: {batches: 10}
max_restarts: 0
"""

DET_SESSION = r"""
set -euo pipefail
pick() { python3 -c "import json, sys; print(json.load(sys.stdin)[$1][\"$2\"])"; }
created=$(det experiment create config.yaml "$MODEL_DIR" \
  --config searcher.max_length.batches=20 --config name=shell-session)
echo "$created"
id=$(echo "$created" | sed -n 's/^Created experiment \([0-9]*\) .*/\1/p')
det experiment wait "$id" --interval 0.5
det experiment list | grep shell-session >/dev/null
det e describe "$id" | grep COMPLETED >/dev/null
trial=$(det experiment list-trials "$id" --json | pick 0 id)
det trial logs "$trial" --tail 3 > tail.txt
test "$(wc -l < tail.txt)" -eq 3
det experiment label add "$id" keep
det experiment describe "$id" --json | grep '"keep"' >/dev/null
det experiment archive "$id"
if det experiment list | grep shell-session >/dev/null; then exit 11; fi
det experiment list --all | grep shell-session >/dev/null
uuid=$(det experiment list-checkpoints "$id" --json | pick -1 uuid)
det checkpoint download "$uuid" -o downloaded
test -n "$(ls downloaded)"
det experiment config "$id" > stored-config.yaml
echo "$uuid" > uuid.txt
det experiment delete "$id" --yes
if det experiment describe "$id"; then exit 12; fi
echo SESSION-OK
"""


@pytest.fixture(scope="module")
def master(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MasterProcess]:
    process = MasterProcess(tmp_path_factory.mktemp("det-session-master")).start()
    try:
        yield process
    finally:
        process.stop()


DET_TABLES = r"""
state=$(det e list | awk -F'|' -v id="$id" '$1 + 0 == id {gsub(/ /, "", $5); print $5}')
test "$state" = COMPLETED
det e list --csv | grep "^$id,admin,shell-session," >/dev/null
test "$(det e lt "$id" --csv | sed -n 2p | cut -d, -f1)" = "$trial"
det e lc "$id" | awk -F'|' 'NR > 2 && $5 ~ /-/ {n++} END {exit n < 1}'
det t describe "$trial" | grep '^Workloads:$' >/dev/null
"""
"""det-only lines: its presto tables parsed with awk, its CSV with cut (after ``trial=``)."""


def test_a_det_shell_session_runs_as_pedl(master: MasterProcess, tmp_path: Path) -> None:
    script = re.sub(r"\bdet ", "pedl ", DET_SESSION)
    assert "det " not in script
    _run_session(master, tmp_path, script)


def test_a_det_shell_session_runs_as_typed(master: MasterProcess, tmp_path: Path) -> None:
    """The same session through the ``det`` command itself, with det's tables parsed."""
    marker = "det experiment label add"
    script = DET_SESSION.replace(marker, DET_TABLES.strip() + "\n" + marker, 1)
    _run_session(master, tmp_path, script)


def _run_session(master: MasterProcess, tmp_path: Path, script: str) -> None:
    (tmp_path / "config.yaml").write_text(CONFIG)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PEDL_MASTER", "PEDL_USER"))}
    env.pop("PEDL_PASSWORD", None)
    env.update(
        DET_MASTER=master.url,
        DET_USER=ADMIN,
        DET_PASS=ADMIN_PASSWORD,
        PEDL_CONFIG_DIR=str(tmp_path / "pedl-config"),
        MODEL_DIR=str(MODEL_DIR),
        PATH=f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}",
    )
    done = subprocess.run(
        ["bash", "-c", script],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=scaled(300),
    )
    assert done.returncode == 0 and "SESSION-OK" in done.stdout, (
        done.stdout + done.stderr + master.log()[-3000:]
    )
    storage = yaml.safe_load((tmp_path / "stored-config.yaml").read_text())["checkpoint_storage"]
    host_path = Path(storage["host_path"]).expanduser() / (storage.get("storage_path") or "")
    assert host_path.is_dir()  # the master's checkpoints were there
    assert not (host_path / (tmp_path / "uuid.txt").read_text().strip()).exists()


def test_test_mode_follows_the_first_trial(master: MasterProcess, tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(
        CONFIG.replace("max_length: {batches: 40}", "max_trials: 3, max_length: {batches: 40}")
    )
    args = ["--master", master.url, "experiment", "create", str(config), str(MODEL_DIR)]
    result = CliRunner().invoke(cli, [*args, "-t", "--follow-first-trial"])
    assert result.exit_code == 0, result.output + master.log()[-3000:]
    assert "Created test experiment" in result.output and "ended: COMPLETED" in result.output
    experiment_id = int(re.findall(r"Created test experiment (\d+)", result.output)[0])
    record = master.http.get(f"/experiments/{experiment_id}").json()
    assert record["name"] == "det-habits (test mode)"
    assert record["config"]["searcher"]["name"] == "single"
    trials = master.http.get(f"/experiments/{experiment_id}/trials").json()["items"]
    assert len(trials) == 1 and trials[0]["total_batches"] == 10
    lines = master.http.get(f"/trials/{trials[0]['id']}/logs").json()
    assert lines and lines[-1]["message"] in result.output
