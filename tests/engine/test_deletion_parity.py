"""Local mode and the master carry out the engine's deletions alike (one executor,
:func:`pedl.engine.delete_checkpoints`): the same experiment, run once in local mode (in this
process) and once on a real master, ends with the same checkpoints DELETED and COMPLETED, the
same directories in its checkpoint storage, and deletes them in the same order.

The experiment is the framework-free Core API script (``tests/compat/models/det038_core_api``:
a checkpoint every 10 batches, 40 batches) over a grid of two points, one trial at a time,
keeping each trial's latest checkpoint only: when a trial ends, its checkpoints at 10, 20 and 30
batches are deleted. One of them (the first trial's at 10 batches) is made unremovable while the
trial runs: in both shells it stays listed (COMPLETED) with its files, not marked DELETED."""

from __future__ import annotations

import os
import subprocess
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from sqlalchemy.orm import Session

from pedl.db import checkpoints as checkpoints_repo
from pedl.db import trials as trials_repo
from pedl.local import LocalExperiment
from tests.master.e2e import MasterProcess, create_experiment, trials, wait_for
from tests.waits import scaled

pytestmark = pytest.mark.slow

MODEL = Path(__file__).parents[1] / "compat" / "models" / "det038_core_api"

# Each step sleeps this long, so that the watcher below pins the first checkpoint long before
# its trial ends (30 steps later), however loaded the machine is.
STEP_DELAY = scaled(0.1)

CONFIG = f"""
name: deletion-parity
entrypoint: python3 train.py --steps 40
hyperparameters:
  increment_by: {{type: categorical, vals: [1, 2]}}
searcher:
  name: grid
  metric: x
  smaller_is_better: false
  max_concurrent_trials: 1
max_restarts: 0
checkpoint_storage:
  save_trial_latest: 1
  save_trial_best: 0
  save_experiment_best: 0
environment:
  environment_variables: [PEDL_TEST_STEP_DELAY={STEP_DELAY:.3f}]
"""

Key = tuple[int, int]
"""A checkpoint, by what both runs share: its trial's ``increment_by`` and its batch count."""

PINNED: Key = (1, 10)
"""The checkpoint made unremovable while its trial runs."""

DELETED_WITH_PINNED = [(1, 20), (1, 30)]
"""The checkpoints the engine asks to delete together with :data:`PINNED` (its trial's end)."""

Snapshot = dict[Key, tuple[str, str]]
"""Every checkpoint of a run: ``{key: (state, uuid)}``."""


def pin(directory: Path) -> Callable[[], None]:
    """Make ``directory``'s files unremovable (root removes anything a mode forbids, so for
    root the directory is made immutable); return what undoes it."""
    if os.geteuid() == 0:
        done = subprocess.run(["chattr", "+i", str(directory)], capture_output=True, text=True)
        assert done.returncode == 0, f"cannot make {directory} immutable: {done.stderr}"

        def undo() -> None:
            subprocess.run(["chattr", "-i", str(directory)], check=True)

        return undo
    directory.chmod(0o555)
    return lambda: directory.chmod(0o755)


class Watcher:
    """Polls a run's checkpoints while it runs. Pins :data:`PINNED` as soon as it is listed,
    until its removal was tried and it was given back (no longer: only ``chattr -i`` removes
    an immutable directory that a killed test would leave). Records each new set of DELETED
    checkpoints (the order of deletions: the engine claims one action's checkpoints in one
    transaction, and the trials run one at a time); the pinned one is left out of that
    record: it is claimed (DELETED) for as long as its removal is tried, then given back."""

    def __init__(self, snapshot: Callable[[], Snapshot], root: Path) -> None:
        self.snapshot = snapshot
        self.root = root
        self.deletions: list[frozenset[Key]] = []
        self.pinned_uuid: str | None = None
        self.error: BaseException | None = None
        self._undo: Callable[[], None] | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)

    def __enter__(self) -> Watcher:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=scaled(30))
        self._unpin()
        if self.error is not None:
            raise self.error

    def _watch(self) -> None:
        try:
            while not self._stop.is_set():
                self.observe()
                self._stop.wait(0.05)
            self.observe()
        except BaseException as err:  # reported by __exit__, in the test's thread
            self.error = err

    def _unpin(self) -> None:
        if self._undo is not None:
            self._undo()
            self._undo = None

    def observe(self) -> None:
        checkpoints = self.snapshot()
        if self.pinned_uuid is None and PINNED in checkpoints:
            state, uuid = checkpoints[PINNED]
            assert state == "COMPLETED", f"{PINNED} was {state} before it could be pinned"
            self._undo = pin(self.root / uuid)
            self.pinned_uuid = uuid
        elif self._undo is not None and given_back(checkpoints):
            self._unpin()
        deleted = frozenset(
            k for k, (state, _) in checkpoints.items() if state == "DELETED" and k != PINNED
        )
        seen = self.deletions[-1] if self.deletions else frozenset()
        if deleted != seen:
            assert seen <= deleted, f"a deleted checkpoint came back: {seen - deleted}"
            self.deletions.append(deleted)


def given_back(checkpoints: Snapshot) -> bool:
    """Whether :data:`PINNED` was claimed, its removal tried and it was given back: the
    others claimed with it (in one transaction) are DELETED, and it is COMPLETED again."""
    return checkpoints[PINNED][0] == "COMPLETED" and all(
        checkpoints.get(key, ("", ""))[0] == "DELETED" for key in DELETED_WITH_PINNED
    )


class Outcome:
    """What a run left: its checkpoints, the directories in its storage, its deletions."""

    def __init__(self, checkpoints: Snapshot, root: Path, watcher: Watcher) -> None:
        self.states = {key: state for key, (state, _) in checkpoints.items()}
        by_uuid = {uuid: key for key, (_, uuid) in checkpoints.items()}
        names = sorted(p.name for p in root.iterdir() if not p.name.startswith(".tmp-"))
        unknown = [name for name in names if name not in by_uuid]
        assert not unknown, f"directories of no checkpoint in {root}: {unknown}"
        self.directories = {by_uuid[name] for name in names}
        self.deletions = [sorted(step) for step in watcher.deletions]
        self.pinned = watcher.pinned_uuid


def run_locally(tmp_path: Path) -> Outcome:
    config = tmp_path / "config.yaml"
    config.write_text(CONFIG)
    experiment = LocalExperiment.create(config, MODEL, tmp_path / "out")
    root = experiment.directory / "checkpoints"

    def snapshot() -> Snapshot:
        with experiment.database.session() as session:
            return local_checkpoints(session, experiment.experiment_id)

    try:
        with Watcher(snapshot, root) as watcher:
            summary = experiment.run()
        assert summary.state == "COMPLETED", [t.error for t in summary.trials]
        return Outcome(snapshot(), root, watcher)
    finally:
        experiment.close()


def local_checkpoints(session: Session, experiment_id: int) -> Snapshot:
    found: Snapshot = {}
    for trial in trials_repo.all_trials(session, experiment_id):
        rows, _ = checkpoints_repo.list_checkpoints(session, trial_id=trial.id, limit=1000)
        for checkpoint, _ in rows:
            key = (trial.hparams["increment_by"], checkpoint.total_batches)
            found[key] = (checkpoint.state.value, checkpoint.uuid)
    return found


@pytest.fixture(scope="module")
def master(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MasterProcess]:
    # Auth off (loopback only): this test is about deleting checkpoints, not signing in.
    process = MasterProcess(tmp_path_factory.mktemp("master"), env={"PEDL_AUTH": "false"}).start()
    try:
        yield process
    finally:
        process.stop()


def run_on_master(master: MasterProcess) -> Outcome:
    http = master.http
    root = master.home / "pedl" / "checkpoints"
    experiment_id = create_experiment(http, CONFIG, MODEL)

    def snapshot() -> Snapshot:
        increment_by = {t["id"]: t["hparams"]["increment_by"] for t in trials(http, experiment_id)}
        response = http.get(f"/experiments/{experiment_id}/checkpoints", params={"limit": 1000})
        assert response.status_code == 200, response.text
        return {
            (increment_by[c["trial_id"]], c["total_batches"]): (c["state"], c["uuid"])
            for c in response.json()["items"]
        }

    with Watcher(snapshot, root) as watcher:
        wait_for(http, experiment_id, {"COMPLETED"}, timeout=300, master=master)
    return Outcome(snapshot(), root, watcher)


def test_local_mode_and_the_master_delete_the_same_checkpoints_in_the_same_order(
    master: MasterProcess, tmp_path: Path
) -> None:
    local = run_locally(tmp_path)
    remote = run_on_master(master)

    # Each trial keeps its latest checkpoint (40 batches) and the one whose files could not
    # be removed; the others are deleted, from the record and the storage.
    expected = {
        (i, b): "COMPLETED" if b == 40 or (i, b) == PINNED else "DELETED"
        for i in (1, 2)
        for b in (10, 20, 30, 40)
    }
    assert local.states == expected
    assert remote.states == local.states
    kept = {key for key, state in expected.items() if state == "COMPLETED"}
    assert local.directories == kept
    assert remote.directories == local.directories
    assert local.pinned is not None and remote.pinned is not None
    # First the first trial's (when it ended), then the second's.
    assert local.deletions == [
        [(1, 20), (1, 30)],
        [(1, 20), (1, 30), (2, 10), (2, 20), (2, 30)],
    ]
    assert remote.deletions == local.deletions
