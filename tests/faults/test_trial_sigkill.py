"""Fault injection: SIGKILL a trial process at random batches and while it writes a checkpoint.

Each run is a real ``pedl experiment create --local`` process, killed by a real SIGKILL from
inside the training loop (after a chosen batch, or while a checkpoint is being written), then
continued with ``pedl experiment resume``, which may be killed again. The final weights must be
bitwise equal to an uninterrupted run's, and the metric rows exactly the same (none missing,
none doubled). The kill points are drawn from a seeded generator (the kill points are in the
failure message), so a failure replays.

The input kind whose position is saved state (a tf.data dataset: its iterator's checkpoint) is
the one killed end to end. Arrays and Sequences are positioned by the batch count alone, a pure
function of it: for them the test checks, without killing processes, that the batches a run
resuming at any batch is fed are exactly those the undisturbed run was fed from there (what the
rest of the trial restores, weights, optimizer, RNGs, metric rows, does not depend on the kind).
"""

from __future__ import annotations

import random
import signal
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from pedl.keras._data import make_training_data
from tests import local_record as record
from tests.faults.local_run import MODEL_DIR, pedl
from tests.faults.resume_model import Batches, blobs

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


KILLS = 7
KILLED_KIND = "dataset"


@pytest.mark.slow
def test_sigkilled_at_random_batches_then_resumed_ends_exactly_as_undisturbed(
    tmp_path: Path,
) -> None:
    kind = KILLED_KIND
    baseline, code, output = create(tmp_path, kind, "baseline")
    assert code == 0, output
    expected_weights, expected_rows = outcome(baseline)
    assert [b for k, b, _ in expected_rows if k == "validation"] == [8, 16, 24, 32, 40, 48]

    # One trial killed again and again, each time further on: the fixed points and random
    # others, every one before the last batch (so every process is killed).
    rng = random.Random(f"kill-{kind}")
    others = sorted(set(range(1, TOTAL_BATCHES)) - set(FIXED_KILLS))
    kills = sorted([*FIXED_KILLS, *rng.sample(others, KILLS - len(FIXED_KILLS))])
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
    # The rows first: the first one that differs says after which resume the runs parted.
    first = next(
        (i for i, (a, b) in enumerate(zip(rows, expected_rows, strict=False)) if a != b), None
    )
    assert rows == expected_rows, (
        f"metric rows differ after kills at batches {kills}; first at row {first}: "
        f"{rows[first] if first is not None else rows[len(expected_rows) :]} against "
        f"{expected_rows[first] if first is not None else expected_rows[len(rows) :]}"
    )
    assert weights == expected_weights, f"weights differ after kills at batches {kills}"


def training_data(loader: Any, *, wrapped: bool) -> Any:
    """The resume model's training input as the Keras controller makes it (per-slot batch of
    16, shuffled with a trial seed); ``wrapped``: ``loader`` is a wrapped tf.data dataset."""
    return make_training_data(
        loader,
        is_wrapped_dataset=lambda _: wrapped,
        batch_size=lambda: 16,
        shuffle=True,
        seed=1234,
        fit_workers=0,
        fit_use_multiprocessing=False,
        fit_max_queue_size=1,
    )


@pytest.mark.parametrize("kind", ["arrays", "sequence"])
def test_a_run_resumed_at_any_batch_is_fed_the_undisturbed_runs_batches(kind: str) -> None:
    """The resume model's training data, positioned as the Keras controller positions it (its
    per-slot batch of 16, shuffled with a trial seed), from every batch a killed run can resume
    at (0 and every checkpoint, here every batch) up to the trial's end."""
    x, y = blobs(100, 0)  # ResumeTrial's training data

    def fed(start: int) -> list[bytes]:
        """The first TOTAL_BATCHES - start batches fed to fit by a run resumed at start."""
        data = training_data((x, y) if kind == "arrays" else Batches(x, y, 16), wrapped=False)
        try:
            batches = list(data.fit_input(start).take(TOTAL_BATCHES - start).as_numpy_iterator())
        finally:
            data.close()
        return [b"".join(np.asarray(part).tobytes() for part in batch) for batch in batches]

    undisturbed = fed(0)
    assert len(undisturbed) == TOTAL_BATCHES
    # 7 batches a pass, each pass in an order of its own: where in which pass a run resumes
    # matters
    assert undisturbed[:7] != undisturbed[7:14] != undisturbed[14:21]
    for start in range(1, TOTAL_BATCHES):
        assert fed(start) == undisturbed[start:], f"{kind}: resumed at batch {start}"


@pytest.mark.parametrize("ending", ["batch", "prefetch"])
def test_a_dataset_resumed_at_any_batch_is_fed_the_undisturbed_runs_batches(
    tmp_path: Path, ending: str
) -> None:
    """The dataset kind, resumed at every batch of its first three passes (a pass is 7
    batches): through a checkpoint's save and restore, fit is fed exactly what the undisturbed
    run was fed from there. The ends of passes are where TensorFlow's saved iterator state
    failed (the next pass's shuffle seeds were not restored: at the last batch of a pass, and
    with a ``prefetch`` at the pipeline's end one or two batches before), and tf.data's
    injected prefetch made it fail elsewhere too, depending on the timing; a pause before
    some saves lets a background thread run ahead if one is there."""
    import tensorflow as tf

    x, y = blobs(100, 0)

    def data() -> Any:
        tf.random.set_seed(1234)
        dataset = tf.data.Dataset.from_tensor_slices((x, y)).shuffle(50, seed=3).batch(16)
        if ending == "prefetch":
            dataset = dataset.prefetch(tf.data.AUTOTUNE)
        return training_data(dataset, wrapped=True)

    def batches(iterator: Any, count: int) -> list[bytes]:
        return [np.asarray(next(iterator)[0]).tobytes() for _ in range(count)]

    count = 10
    undisturbed = batches(iter(data().fit_input(0)), 3 * 7 + 1 + count)
    for at in range(3 * 7 + 1):
        saved = data()
        iterator = iter(saved.fit_input(0))
        saved.on_fit_iterator(iterator)
        batches(iterator, at)
        if at % 2:
            time.sleep(0.02)
        directory = tmp_path / str(at)
        directory.mkdir()
        state = saved.save(directory)

        resumed = data()
        resumed.restore(directory, state)
        iterator = iter(resumed.fit_input(at))
        resumed.on_fit_iterator(iterator)
        assert batches(iterator, count) == undisturbed[at : at + count], f"resumed at {at}"


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
