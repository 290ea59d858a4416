"""A TFKerasTrial on two worker processes, started as a launcher starts them (issue 20).

Each test spawns TensorFlow processes (a few seconds each), so they are few and tiny.
"""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest

from pedl.keras._keras import LEGACY
from pedl.vocabulary import MetricKind
from tests.keras.multiworker import run_workers

pytestmark = pytest.mark.slow

DIGITS = {
    "trial": "examples.digits_keras:DigitsTrial",
    "hparams": {
        "global_batch_size": 32,
        "conv_filters": 4,
        "dense_units": 16,
        "dropout": 0.0,
        "learning_rate": 0.01,
    },
    "overrides": ["searcher.max_length.batches=30", "scheduling_unit=10"],
}


def test_two_workers_train_the_same_model_on_half_batches_and_validate_as_one(
    tmp_path: Path,
) -> None:
    one = run_workers(DIGITS, tmp_path / "one", 1)[0]
    chief, other = run_workers(DIGITS, tmp_path / "two", 2)

    assert chief["outcome"] == other["outcome"] == "COMPLETED"
    assert chief["batches"] == other["batches"] == 30
    # Both on this machine: the gradients averaged through its memory, no strategy.
    assert not chief["strategy"] and not other["strategy"]
    # Both workers end with the same weights, bit for bit (ring all-reduce: every worker
    # gets the same sums), each having trained on 30 batches of half the global batch.
    for a, b in zip(
        chief["weights"] + chief["variables"], other["weights"] + other["variables"], strict=True
    ):
        np.testing.assert_array_equal(a, b)
    assert chief["batch_sizes"] == other["batch_sizes"] == [16] * 30
    # Only the chief reports, registers checkpoints and completes the operation.
    assert other["writes"] == other["checkpoints"] == other["completed"] == []
    assert [w[1] for w in chief["writes"]] == [10, 20, 30, 30]
    assert len(chief["checkpoints"]) == 1 and chief["completed"][0][0] == 30

    # The same global batch on one worker: each worker's gradient of its mean loss over 16
    # records, averaged over the two workers, is the one worker's gradient over the 32
    # records up to float summation order, so the weights agree to float32 rounding
    # (compounded over 30 Adam steps) and validation accuracy on 360 records to within a
    # record or two whose prediction sits on a decision boundary.
    for a, b in zip(chief["weights"], one["weights"], strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-3, atol=1e-4)
    val_two = chief["metrics"][(MetricKind.VALIDATION, 30)]
    val_one = one["metrics"][(MetricKind.VALIDATION, 30)]
    assert abs(val_two["val_accuracy"] - val_one["val_accuracy"]) <= 2 / 360
    assert abs(val_two["val_loss"] - val_one["val_loss"]) <= 1e-3


@pytest.mark.parametrize("collective", ["host", "strategy"])
def test_two_workers_resume_bitwise_exactly_from_a_preemption_at_a_random_batch(
    tmp_path: Path, collective: str
) -> None:
    # Both ways of averaging the gradients: through this machine's memory (the default
    # where every worker is on one machine) and MultiWorkerMirroredStrategy's (across
    # machines; here by PEDL_HOST_ALLREDUCE=0).
    env = {"PEDL_HOST_ALLREDUCE": "1" if collective == "host" else "0"}
    job = {
        # Dropout: seed-generator state too. Through this machine's memory, a batch
        # normalization too: moving statistics that each worker's half of the batch moves,
        # averaged with the gradients (under the strategy each worker keeps its own).
        "trial": "tests.keras.trials:"
        + ("NormalizedTrial" if collective == "host" else "SmallTrial"),
        "overrides": [
            "searcher.max_length.batches=12",
            "scheduling_unit=1",
            "checkpoint_policy=none",
        ],
    }
    baseline = run_workers(job, tmp_path / "a", 2, env=env)
    assert [r["strategy"] for r in baseline] == [collective == "strategy"] * 2
    stop_at = random.Random(20).randint(1, 11)
    first = run_workers({**job, "preempt_after": stop_at}, tmp_path / "b", 2, env=env)
    assert [r["outcome"] for r in first] == ["PREEMPTED", "PREEMPTED"]
    assert first[0]["batches"] == first[1]["batches"] == stop_at
    (storage_id, batches), *_ = first[0]["checkpoints"][-1:]
    assert batches == stop_at
    resumed = run_workers({**job, "latest_checkpoint": storage_id}, tmp_path / "b", 2, env=env)

    for run in (baseline, resumed):
        for a, b in zip(run[0]["weights"], run[1]["weights"], strict=True):
            np.testing.assert_array_equal(a, b)
    for a, b in zip(
        baseline[0]["weights"] + baseline[0]["variables"],
        resumed[0]["weights"] + resumed[0]["variables"],
        strict=True,
    ):
        np.testing.assert_array_equal(a, b)
    # No metric row lost or doubled, and each row as the uninterrupted run's.
    assert first[0]["writes"] + resumed[0]["writes"] == baseline[0]["writes"]
    assert {**first[0]["metrics"], **resumed[0]["metrics"]} == baseline[0]["metrics"]


def test_workers_whose_copies_start_apart_start_from_the_chiefs(tmp_path: Path) -> None:
    job = {
        "trial": "tests.keras.trials:RankSeededTrial",
        "overrides": ["searcher.max_length.batches=6", "scheduling_unit=3"],
    }
    chief, other = run_workers(job, tmp_path / "two", 2)
    assert not chief["strategy"]
    # Each applied the same averaged gradients from the chief's weights: the same end.
    for a, b in zip(
        chief["weights"] + chief["variables"], other["weights"] + other["variables"], strict=True
    ):
        np.testing.assert_array_equal(a, b)
    # ... and the run is the one where every worker drew the chief's weights, bit for bit.
    chief_drawn = run_workers(
        {**job, "trial": "tests.keras.trials:ChiefSeededTrial"}, tmp_path / "same", 2
    )[0]
    for a, b in zip(chief["weights"], chief_drawn["weights"], strict=True):
        np.testing.assert_array_equal(a, b)


@pytest.mark.keras2  # also in Keras 2 mode (make test)
@pytest.mark.parametrize("kind", ["sequence", "dataset"])
def test_two_workers_shard_sequences_and_wrapped_datasets(tmp_path: Path, kind: str) -> None:
    job = {
        "trial": "tests.keras.trials:SmallTrial",
        "input_kind": kind,
        "overrides": ["searcher.max_length.batches=10", "scheduling_unit=5"],
    }
    chief, other = run_workers(job, tmp_path, 2)
    assert chief["outcome"] == other["outcome"] == "COMPLETED"
    for a, b in zip(chief["weights"], other["weights"], strict=True):
        np.testing.assert_array_equal(a, b)
    # Per-slot batches (8 of the global 16), the short last batch of a pass excepted: a
    # Sequence's items rank, rank + 2, ... of its seeded order; a dataset's records
    # rank, rank + 2, ... (wrap_dataset shards it).
    for result in (chief, other):
        assert len(result["batch_sizes"]) == 10
        assert all(size <= 8 for size in result["batch_sizes"])
        assert result["batch_sizes"].count(8) >= 9
    assert [b for _, b in chief["writes"]] == [5, 10, 10]
    assert other["writes"] == []


@pytest.mark.keras2
@pytest.mark.skipif(not LEGACY, reason="Keras 2 mode only (make test's TF_USE_LEGACY_KERAS=1 pass)")
def test_keras2_mode_two_workers_validate_unequal_shares_as_one_and_resume_bitwise(
    tmp_path: Path,
) -> None:
    # A Sequence of 5 validation batches: 3 for the chief, 2 for the other worker, whose
    # Keras 2 test steps (a collective in each) pad with an empty batch.
    job = {
        "trial": "tests.keras.trials:SmallTrial",
        "input_kind": "sequence",
        "overrides": [
            "searcher.max_length.batches=12",
            "scheduling_unit=1",
            "perform_initial_validation=true",
            "checkpoint_policy=none",
        ],
    }
    one = run_workers(job, tmp_path / "one", 1)[0]
    baseline = run_workers(job, tmp_path / "a", 2)
    assert [r["outcome"] for r in baseline] == ["COMPLETED", "COMPLETED"]
    for a, b in zip(
        baseline[0]["weights"] + baseline[0]["variables"],
        baseline[1]["weights"] + baseline[1]["variables"],
        strict=True,
    ):
        np.testing.assert_array_equal(a, b)
    # The same initial weights validated by one worker and by two: every record counted
    # once (an empty batch adds nothing).
    initial_one = one["metrics"][(MetricKind.VALIDATION, 0)]
    initial_two = baseline[0]["metrics"][(MetricKind.VALIDATION, 0)]
    assert initial_two["val_accuracy"] == initial_one["val_accuracy"]
    assert initial_two["val_loss"] == pytest.approx(initial_one["val_loss"], abs=1e-6)
    assert [b for _, b in baseline[0]["writes"]] == [0, *range(1, 13), 12]
    assert baseline[1]["writes"] == []

    stop_at = random.Random(22).randint(1, 11)
    first = run_workers({**job, "preempt_after": stop_at}, tmp_path / "b", 2)
    assert [r["outcome"] for r in first] == ["PREEMPTED", "PREEMPTED"]
    (storage_id, batches), *_ = first[0]["checkpoints"][-1:]
    assert batches == stop_at
    resumed = run_workers({**job, "latest_checkpoint": storage_id}, tmp_path / "b", 2)
    for a, b in zip(
        baseline[0]["weights"] + baseline[0]["variables"],
        resumed[0]["weights"] + resumed[0]["variables"],
        strict=True,
    ):
        np.testing.assert_array_equal(a, b)
    assert first[0]["writes"] + resumed[0]["writes"] == baseline[0]["writes"]
    assert {**first[0]["metrics"], **resumed[0]["metrics"]} == baseline[0]["metrics"]
