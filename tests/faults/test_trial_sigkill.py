"""Fault injection: SIGKILL a trial process at random batches and while it writes a checkpoint.

Each run is a real ``pedl experiment create --local`` process, killed by a real SIGKILL from
inside the training loop (after a chosen batch, or while a checkpoint is being written), then
continued with ``pedl experiment resume``, which may be killed again. The final weights must be
bitwise equal to an uninterrupted run's, and the metric rows exactly the same (none missing,
none doubled). The kill points are drawn from a seeded generator (the seed is in the test's
name), so a failure replays.
"""

from __future__ import annotations

import random
import signal
from pathlib import Path

import pytest

from tests import local_record as record
from tests.faults.local_run import MODEL_DIR, pedl

TOTAL_BATCHES = 48
CONFIG = """
name: resume-{kind}
data: {{input: {kind}}}
hyperparameters: {{global_batch_size: 16}}
records_per_epoch: 96
searcher:
  name: single
  metric: val_accuracy
  smaller_is_better: false
  max_length: {{batches: {total}}}
scheduling_unit: 5
min_validation_period: {{batches: 8}}
min_checkpoint_period: {{batches: 12}}
checkpoint_policy: none
reproducibility: {{experiment_seed: 11}}
"""
# Checkpoints fall at 12, 24, 36, 48; chunks end at 5, 8, 12, 16, ...; a pass over the data
# is 7 batches. 17 is mid-chunk and mid-epoch after a checkpoint; 3 is before any checkpoint.
FIXED_KILLS = [3, 17]


def create(
    tmp: Path, kind: str, name: str, env: dict[str, str] | None = None
) -> tuple[Path, int, str]:
    config = tmp / f"{kind}.yaml"
    config.write_text(CONFIG.format(kind=kind, total=TOTAL_BATCHES))
    result = pedl(
        "experiment",
        "create",
        "--local",
        str(config),
        str(MODEL_DIR),
        "--output-dir",
        str(tmp / name),
        cwd=tmp,
        env=env,
    )
    return tmp / name / "exp-1", result.returncode, result.stdout + result.stderr


def outcome(experiment: Path) -> tuple[bytes, list[tuple[str, int, dict[str, float]]]]:
    (trial,) = record.trials(experiment)
    assert trial.state == "COMPLETED", trial.error
    assert trial.latest_checkpoint_uuid is not None
    rows = record.metric_rows(experiment, trial.id)
    checkpoint = experiment / "checkpoints" / trial.latest_checkpoint_uuid
    return (checkpoint / "state" / "variables.bin").read_bytes(), rows


KILLS_PER_KIND = 7
"""Three input kinds: 21 SIGKILLs in all."""


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["arrays", "sequence", "dataset"])
def test_sigkilled_at_random_batches_then_resumed_ends_exactly_as_undisturbed(
    tmp_path: Path, kind: str
) -> None:
    baseline, code, output = create(tmp_path, kind, "baseline")
    assert code == 0, output
    expected_weights, expected_rows = outcome(baseline)
    assert [b for k, b, _ in expected_rows if k == "validation"] == [8, 16, 24, 32, 40, 48]

    # One trial killed again and again, each time further on: the fixed points and random
    # others, every one before the last batch (so every process is killed).
    rng = random.Random(f"kill-{kind}")
    others = sorted(set(range(1, TOTAL_BATCHES)) - set(FIXED_KILLS))
    kills = sorted([*FIXED_KILLS, *rng.sample(others, KILLS_PER_KIND - len(FIXED_KILLS))])
    experiment, code, output = create(
        tmp_path, kind, "killed", env={"PEDL_TEST_KILL_AT_BATCH": str(kills[0])}
    )
    assert code == -signal.SIGKILL, f"not killed at batch {kills[0]}:\n{output}"
    for kill_at in kills[1:]:
        resumed = pedl(
            "experiment",
            "resume",
            str(experiment),
            cwd=tmp_path,
            env={"PEDL_TEST_KILL_AT_BATCH": str(kill_at)},
        )
        assert resumed.returncode == -signal.SIGKILL, (
            f"not killed at batch {kill_at}:\n{resumed.stdout}{resumed.stderr}"
        )
    log = experiment / "experiment.log"  # the run's log: the terminal shows progress only
    before = log.stat().st_size
    resumed = pedl("experiment", "resume", str(experiment), cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    with log.open() as file:
        file.seek(before)
        assert "resumed from checkpoint" in file.read()
    weights, rows = outcome(experiment)
    assert weights == expected_weights, f"weights differ after kills at batches {kills}"
    assert rows == expected_rows, f"metric rows differ after kills at batches {kills}"


@pytest.mark.slow
def test_sigkill_while_writing_a_checkpoint_leaves_no_checkpoint(tmp_path: Path) -> None:
    baseline, code, output = create(tmp_path, "arrays", "baseline")
    assert code == 0, output
    expected = outcome(baseline)

    experiment, code, output = create(
        tmp_path, "arrays", "torn", env={"PEDL_TEST_KILL_IN_CHECKPOINT": "2"}
    )
    assert code == -signal.SIGKILL, output
    # The second checkpoint (at batch 24) was cut off before it was complete: only the
    # first one is recorded, and the half-written one is not visible as a checkpoint.
    assert record.checkpoint_batches(experiment) == [12]
    visible = [p.name for p in (experiment / "checkpoints").iterdir() if not p.name.startswith(".")]
    assert len(visible) == 1

    resumed = pedl("experiment", "resume", str(experiment), cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert outcome(experiment) == expected
