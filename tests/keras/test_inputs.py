"""Every input kind a trial may return trains, and bad inputs fail with a clear message."""

from __future__ import annotations

import multiprocessing
import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import tensorflow as tf

from pedl import TrialOutcome
from pedl.keras import InvalidDataError, KerasDataAdapter, SequenceAdapter
from pedl.keras._data import ArrayData, SequenceData
from pedl.keras._keras import keras

from .harness import make_run, train
from .trials import ArraySequence, SmallTrial, blobs


def multi_input_model(context: Any, named: bool) -> keras.Model:
    a = keras.Input((2,), name="a")
    b = keras.Input((2,), name="b")
    h = keras.layers.Concatenate()([a, b])
    out = keras.layers.Dense(2, activation="softmax")(keras.layers.Dense(8, activation="relu")(h))
    model = context.wrap_model(keras.Model({"a": a, "b": b} if named else [a, b], out))
    model.compile("adam", "sparse_categorical_crossentropy", metrics=["accuracy"])
    return model


def split(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return x[:, :2], x[:, 2:]


def make_trial(training: Any, validation: Any = None, model: str = "small") -> type:
    class T(SmallTrial):
        def build_model(self) -> keras.Model:
            if model == "list":
                return multi_input_model(self.context, named=False)
            if model == "dict":
                return multi_input_model(self.context, named=True)
            return super().build_model()

        def build_training_data_loader(self) -> Any:
            return training(self.context)

        def build_validation_data_loader(self) -> Any:
            return (validation or training)(self.context)

    return T


def arrays(ctx: Any) -> Any:
    return blobs(64, 0)


def arrays_with_weights(ctx: Any) -> Any:
    x, y = blobs(64, 0)
    return x, y, np.linspace(0.5, 1.5, len(y)).astype("float32")


def list_of_arrays(ctx: Any) -> Any:
    x, y = blobs(64, 0)
    return list(split(x)), y


def dict_of_arrays(ctx: Any) -> Any:
    x, y = blobs(64, 0)
    a, b = split(x)
    return {"a": a, "b": b}, y


def sequence(ctx: Any) -> Any:
    return ArraySequence(*blobs(64, 0), batch_size=16)


def sequence_adapter_threads(ctx: Any) -> Any:
    return SequenceAdapter(ArraySequence(*blobs(64, 0), batch_size=16), workers=2)


def keras_data_adapter_main_thread(ctx: Any) -> Any:
    return KerasDataAdapter(ArraySequence(*blobs(64, 0), batch_size=16), workers=0)


def wrapped_dataset(ctx: Any) -> Any:
    return ctx.wrap_dataset(tf.data.Dataset.from_tensor_slices(blobs(64, 0)).batch(16))


def weighted_dataset(ctx: Any) -> Any:
    x, y = blobs(64, 0)
    w = np.ones(len(y), "float32")
    return ctx.wrap_dataset(tf.data.Dataset.from_tensor_slices((x, y, w)).batch(16))


@pytest.mark.parametrize(
    ("loader", "model"),
    [
        (arrays, "small"),
        (arrays_with_weights, "small"),
        (list_of_arrays, "list"),
        (dict_of_arrays, "dict"),
        pytest.param(*(sequence, "small"), marks=pytest.mark.keras2),
        (sequence_adapter_threads, "small"),
        (keras_data_adapter_main_thread, "small"),
        pytest.param(*(wrapped_dataset, "small"), marks=pytest.mark.keras2),
        (weighted_dataset, "small"),
    ],
)
def test_each_input_kind_trains_and_validates(tmp_path: Path, loader: Any, model: str) -> None:
    run = make_run(tmp_path, overrides=("searcher.max_length.batches=12", "scheduling_unit=5"))
    outcome = train(make_trial(loader, model=model), run)
    assert outcome is TrialOutcome.COMPLETED
    assert run.recorder.batches("training") == [5, 10, 12]
    assert run.recorder.batches("validation") == [12]
    (length, metric), *_ = run.session.completed
    assert length == 12 and 0.0 <= metric <= 1.0
    assert set(run.recorder.metrics[("training", 12)]) == {"loss", "accuracy"}


@pytest.mark.parametrize(
    ("workers", "processes"), [(2, False), (2, True)], ids=["threads", "processes"]
)
def test_a_sequences_loading_workers_train_as_the_training_thread_and_end_with_the_trial(
    tmp_path: Path, workers: int, processes: bool
) -> None:
    """A Sequence loaded ahead by workers (``SequenceAdapter(workers=...)``) trains on the
    same batches in the same order as one loaded in the training thread, and its workers end
    when the trial's training does: a trial stops mid-epoch, where Keras's own loader would
    have kept running (six threads a trial, in a warm worker or a local search)."""

    def loader(workers: int, processes: bool) -> Any:
        def make(ctx: Any) -> Any:
            data = ArraySequence(*blobs(64, 0), batch_size=16)
            return SequenceAdapter(data, workers=workers, use_multiprocessing=processes)

        return make

    def losses(name: str, loader: Any) -> list[float]:
        run = make_run(
            tmp_path / name, overrides=("searcher.max_length.batches=10", "scheduling_unit=3")
        )
        assert train(make_trial(loader), run) is TrialOutcome.COMPLETED
        return [run.recorder.metrics[("training", b)]["loss"] for b in (3, 6, 9, 10)]

    threads = set(threading.enumerate())
    ahead = losses("ahead", loader(workers, processes))
    assert set(threading.enumerate()) <= threads
    assert multiprocessing.active_children() == []
    assert ahead == losses("in-thread", loader(0, False))


def test_arrays_are_batched_with_the_per_slot_batch_size(tmp_path: Path) -> None:
    seen: list[int] = []

    class Count(keras.callbacks.Callback):  # type: ignore[misc]
        def on_train_batch_end(self, batch: int, logs: Any = None) -> None:
            seen.append(batch)

    class T(make_trial(arrays)):  # type: ignore[misc]
        def keras_callbacks(self) -> list[Any]:
            return [Count()]

    # 64 records at 16 per batch: 4 batches per pass, so 9 batches wrap into a third pass.
    run = make_run(tmp_path, overrides=("searcher.max_length.batches=9",))
    train(T, run)
    assert seen == [0, 1, 2, 3, 0, 1, 2, 3, 0]


@pytest.mark.parametrize("loader", [sequence, keras_data_adapter_main_thread])
def test_class_weights_weigh_a_sequences_batches_as_they_weigh_arrays(
    tmp_path: Path, loader: Any
) -> None:
    def losses(name: str, training: Any, class_weight: dict[int, float] | None) -> list[float]:
        class T(make_trial(training)):  # type: ignore[misc]
            def build_model(self) -> keras.Model:
                self.context.configure_fit(shuffle=False, class_weight=class_weight)
                return super().build_model()

        run = make_run(
            tmp_path / name, overrides=("searcher.max_length.batches=8", "scheduling_unit=4")
        )
        assert train(T, run) is TrialOutcome.COMPLETED
        return [run.recorder.metrics[("training", b)]["loss"] for b in (4, 8)]

    weights = {0: 1.0, 1: 3.0}
    weighted = losses("sequence", loader, weights)
    assert weighted == losses("arrays", arrays, weights)
    assert weighted != losses("unweighted", loader, None)


def test_fit_reads_a_sequence_without_autotune_thread() -> None:
    """As for arrays (below): Keras's pipeline of a Sequence read where training reads it,
    built as fit builds it, without tf.data's autotuning."""
    data = SequenceData(
        SequenceAdapter(ArraySequence(*blobs(64, 0), batch_size=16)), shuffle=False, seed=1
    )
    try:
        dataset = data.fit_input(5)
        assert dataset.options().autotune.enabled is False
        x, y = next(iter(dataset))  # batch 5: the second pass's second batch
        np.testing.assert_array_equal(x, blobs(64, 0)[0][16:32])
        np.testing.assert_array_equal(y, blobs(64, 0)[1][16:32])
    finally:
        data.close()


def test_the_array_pipeline_has_no_autotune_thread_to_outlive_fit() -> None:
    """A trial's fit stops mid-pass and Keras keeps its iterator in a reference cycle: with
    tf.data's autotuning on, the collection that frees it waits for the autotune thread
    (bench/p8_leftover_iterator.py: 10.6 and 31.7 s beside load, under 1 s without)."""
    x, y = np.arange(40, dtype=np.float32).reshape(20, 2), np.zeros(20, np.float32)
    data = ArrayData(x, y, None, batch_size=8, shuffle=True, seed=3)
    dataset = data.fit_input(5)
    assert dataset.options().autotune.enabled is False
    # 3 batches a pass (8, 8, 4): batch 5 is the second pass's last, its order's last 4.
    keys = tf.random.stateless_uniform([20], seed=tf.constant([3, 1], tf.int64))
    order = np.argsort(keys.numpy(), kind="stable")
    first = next(iter(dataset))
    np.testing.assert_array_equal(first[0], x[order[16:20]])


def test_unwrapped_dataset_is_rejected_with_instructions(tmp_path: Path) -> None:
    def unwrapped(ctx: Any) -> Any:
        return tf.data.Dataset.from_tensor_slices(blobs(64, 0)).batch(16)

    with pytest.raises(InvalidDataError, match=r"context.wrap_dataset\(dataset\)"):
        train(make_trial(unwrapped, arrays), make_run(tmp_path))


def test_unwrapped_validation_dataset_is_rejected(tmp_path: Path) -> None:
    def unwrapped(ctx: Any) -> Any:
        return tf.data.Dataset.from_tensor_slices(blobs(64, 0)).batch(16)

    with pytest.raises(InvalidDataError, match="build_validation_data_loader"):
        train(make_trial(arrays, unwrapped), make_run(tmp_path))


@pytest.mark.parametrize(
    ("loader", "message"),
    [
        (lambda ctx: [1, 2, 3], "returned list"),
        (lambda ctx: (np.zeros((4, 4)),), "returned tuple"),
        (lambda ctx: "data.csv", "returned str"),
        (lambda ctx: (np.zeros((4, 4)), np.zeros(5)), "different lengths"),
        (lambda ctx: (np.zeros((0, 4)), np.zeros(0)), "empty"),
    ],
)
def test_unsupported_training_data_is_explained(tmp_path: Path, loader: Any, message: str) -> None:
    with pytest.raises(InvalidDataError, match=message):
        train(make_trial(loader, arrays), make_run(tmp_path))


def test_sequence_adapter_rejects_non_sequences() -> None:
    with pytest.raises(TypeError, match=r"keras\.utils\.Sequence"):
        SequenceAdapter([1, 2, 3])
    with pytest.raises(ValueError, match="workers"):
        SequenceAdapter(ArraySequence(*blobs(8, 0), batch_size=4), workers=-1)


def test_arrays_need_a_global_batch_size(tmp_path: Path) -> None:
    run = make_run(tmp_path, hparams={})
    with pytest.raises(ValueError, match="global_batch_size"):
        train(make_trial(arrays), run)


@pytest.mark.keras2
@pytest.mark.parametrize("kind", ["arrays", "sequence"])
def test_a_worker_with_no_validation_batch_gets_an_empty_one_of_the_datas_shape(
    kind: str,
) -> None:
    # 1 record (arrays) or 1 item (a Sequence) on 2 workers: the second worker's share has
    # none, and in Keras 2 mode it runs empty batches of the data's structure and inner shapes.
    from pedl.keras._data import empty_batch, make_validation_input

    x, y = blobs(1, 1)
    loader = (x, y) if kind == "arrays" else ArraySequence(x, y, 8)
    data = make_validation_input(
        loader, is_wrapped_dataset=lambda _: True, batch_size=lambda: 8, rank=1, size=2
    )["x"]
    assert list(data) == []
    empty = empty_batch(data)
    assert [tuple(a.shape) for a in empty] == [(0, 4), (0,)]
    assert [tf.as_dtype(a.dtype) for a in empty] == [tf.float32, tf.int32]
