"""A Determined user's shell session, typed as for ``det`` 0.38.1, runs unchanged against a
real master process (``pedl master``, SQLite) that trains a tiny Keras model: signing in,
accounts, templates, creating experiments and parsing det's tables with ``awk`` and
``cut``, logs, ``set``, pause/activate/kill/wait/continue, checkpoints and downloads
(``--mode``, ``-q``, ``rm --glob``), the model registry, TensorBoard, workspaces and projects
(an experiment created in a project, listed, moved, described) and signing out.

Every line must pass (``set -euxo pipefail``: a failure shows its line), and each line's
output is checked where a script would rely on it."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.accounts import ADMIN, ADMIN_PASSWORD
from tests.master.e2e import MODEL_DIR, MasterProcess
from tests.waits import scaled

pytestmark = pytest.mark.slow

CONFIG = """\
name: det-session
hyperparameters: {global_batch_size: 16, lr: 0.01}
searcher: {name: single, metric: val_accuracy, smaller_is_better: false, max_length: {batches: 20}}
scheduling_unit: 10
min_validation_period: {batches: 10}
min_checkpoint_period: {batches: 10}
max_restarts: 0
"""

TEMPLATE = """\
description: from the session's template
labels: [templated]
"""

SESSION = r"""
set -euxo pipefail
state_of() { det e list --all | awk -F'|' -v id="$1" '$1 + 0 == id {gsub(/ /, "", $5); print $5}'; }
cell() { awk -F'|' -v c="$1" 'NR > 2 {gsub(/ /, "", $c); print $c}'; }  # column c of a table

# Sign in, who am I, the versions.
det version | grep "master_address: http://$DET_MASTER" > /dev/null
echo "$DET_PASS" | det user login admin
test "$(det user whoami)" = "You are logged in as user 'admin'"

# Accounts.
det user create analyst --password analyst-password-1
det user list | awk -F'|' 'NR > 2 {gsub(/ /, "", $2); print $2}' | grep -x analyst > /dev/null
test "$(det user edit analyst --admin true)" = "Changes made to the following fields: Admin"
det user rename analyst analyst2
det user deactivate analyst2
det user list --all --csv | grep ',analyst2,N/A,True,False,' > /dev/null
if det user list --csv | grep ',analyst2,' > /dev/null; then exit 21; fi

# A template, an experiment created paused from it, its state parsed from det's table.
det template set session-template template.yaml
det template list | grep session-template > /dev/null
created=$(det experiment create config.yaml "$MODEL_DIR" --template session-template --paused)
id=$(echo "$created" | sed -n 's/^Created experiment \([0-9]*\).*/\1/p')
test -n "$id"
test "$(state_of "$id")" = PAUSED
det e describe "$id" --json | grep "from the session's template" > /dev/null
det e set description "$id" "a session's experiment"
det e label add "$id" keep
det e activate "$id"
det e wait "$id" --polling-interval 0.5
test "$(state_of "$id")" = COMPLETED
det e list --csv | grep "^$id,admin,det-session," > /dev/null

# Trials, logs, metrics.
trial=$(det e lt "$id" --csv | sed -n 2p | cut -d, -f1)
test -n "$trial"
det trial logs "$trial" --tail 3 > tail.txt
test "$(wc -l < tail.txt)" -eq 3
det t describe "$trial" --metrics-summary | grep val_accuracy > /dev/null

# Checkpoints: list, describe, download (modes, quiet), the best of the experiment.
uuid=$(det e lc "$id" --csv | awk -F, '/^[0-9]+,[0-9]+,/ {u = $5} END {print u}')
det checkpoint describe "$uuid" | grep "$uuid" > /dev/null
test "$(det checkpoint download "$uuid" -o direct --mode direct -q)" = direct
test "$(det checkpoint download "$uuid" -o through-master --mode master -q)" = through-master
diff -r direct through-master
best=$(det e download "$id" -o best -q)
test -d "$best"
det e download-model-def "$id"
test -s "experiment_${id}_model_def.tgz"

# The model registry.
det model create session-model
det model register-version session-model "$uuid"
det model describe session-model | grep "$uuid" > /dev/null
det model list | grep session-model > /dev/null

# TensorBoard over the experiment.
tb=$(det tensorboard start "$id" --no-browser -d)
det tensorboard list | grep "$tb" > /dev/null
det tensorboard config "$tb" | grep "experiment_ids" > /dev/null
det tensorboard logs "$tb" --tail 50 > /dev/null
det tensorboard kill -f "$tb"

# Workspaces and projects: a team's workspace, two projects, an experiment made in one and
# moved to the other.
det workspace create session-team > /dev/null
det w list | cell 2 | grep -x session-team > /dev/null
vision=$(det p create session-team vision --description "image models" | cell 1)
test -n "$vision"
det project create session-team speech > /dev/null
test "$(det w list-projects session-team --sort-by name | cell 3 | tr '\n' ' ')" = "speech vision "
det w describe session-team --json | grep -E '"numProjects": *2' > /dev/null
placed=$(det e create config.yaml "$MODEL_DIR" --project_id "$vision" --paused \
  | sed -n 's/^Created experiment \([0-9]*\).*/\1/p')
det p list-experiments session-team vision | cell 1 | grep -x "$placed" > /dev/null
where=$(det e list --show_project \
  | awk -F'|' -v id="$placed" '$3 + 0 == id {gsub(/ /, ""); print $1 "/" $2}')
test "$where" = session-team/vision
moved=$(det e move "$placed" session-team speech)
test "$moved" = "Moved experiment $placed to project \"speech\""
det p describe session-team speech > described.txt
test "$(head -n 3 described.txt | cell 5)" = 1
sed -n '/^Associated Experiments$/,$p' described.txt | tail -n +2 | cell 1 | grep -x "$placed"
det e kill "$placed"

# A long experiment: killed once its trial exists, continued to a shorter end.
long=$(det e create config.yaml "$MODEL_DIR" --config searcher.max_length.batches=100000 \
  --config name=session-long | sed -n 's/^Created experiment \([0-9]*\).*/\1/p')
for _ in $(seq 600); do
  if [ -n "$(det e lt "$long" --csv | sed -n 2p)" ]; then break; fi
  sleep 0.5
done
det e pause "$long"
test "$(state_of "$long")" = PAUSED
det e kill "$long"
if det e wait "$long" --polling-interval 0.5; then exit 22; fi
test "$(state_of "$long")" = CANCELED
det e continue "$long" --config searcher.max_length.batches=20
det e wait "$long" --polling-interval 0.5
test "$(state_of "$long")" = COMPLETED

# Housekeeping: logs kept 30 days after the end, TensorBoard files gone, a message to all.
det e set log-retention "$id" --days 30
det e delete-tb-files "$id"
det master cluster-message set -m "Maintenance at 18:00 UTC" -d 2h
det master cluster-message get | grep "message: Maintenance at 18:00 UTC" > /dev/null
det master info | grep "^version: " > /dev/null
det master cluster-message clear

# Files removed from a checkpoint, then archive, and sign out.
removed=$(det e lc "$long" --csv | awk -F, '/^[0-9]+,[0-9]+,/ {u = $5} END {print u}')
det checkpoint rm "$removed" --glob '*' --yes | grep "0 file(s) left (DELETED)" > /dev/null
det e archive "$long"
if det e list | grep session-long > /dev/null; then exit 23; fi
det user logout
echo SESSION-OK
"""


@pytest.fixture(scope="module")
def master(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MasterProcess]:
    process = MasterProcess(tmp_path_factory.mktemp("det-session-master")).start()
    try:
        yield process
    finally:
        process.stop()


def test_the_session_has_thirty_det_lines() -> None:
    lines = [line for line in SESSION.splitlines() if re.search(r"(^|[$(|]\s*|\s)det ", line)]
    assert len(lines) >= 30, len(lines)


def test_a_det_shell_session_runs_unchanged(master: MasterProcess, tmp_path: Path) -> None:
    (tmp_path / "config.yaml").write_text(CONFIG)
    (tmp_path / "template.yaml").write_text(TEMPLATE)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PEDL_")}
    env.update(
        DET_MASTER=master.url.removeprefix("http://"),
        DET_USER=ADMIN,
        DET_PASS=ADMIN_PASSWORD,
        PEDL_CONFIG_DIR=str(tmp_path / "det-config"),
        MODEL_DIR=str(MODEL_DIR),
        PATH=f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}",
    )
    done = subprocess.run(
        ["bash", "-c", SESSION],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=scaled(600),
    )
    assert done.returncode == 0 and "SESSION-OK" in done.stdout, (
        f"exit {done.returncode}\n{done.stdout[-4000:]}\n{done.stderr[-4000:]}\n"
        + master.log()[-3000:]
    )
