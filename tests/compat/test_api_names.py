"""Determined's names in ``pedl.keras``: the array adapters, ``context.env``, the dataset
cache, datasets transformed after ``wrap_dataset``, the unseeded-shuffle warning,
``.detignore`` and YAML 1.2 numbers."""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf
from determined import keras as det_keras
from tensorflow.python.framework import config as tf_config

from pedl.config import parse_config
from pedl.keras import TFKerasTrialContext
from pedl.keras._shuffle_check import warn_if_unreproducible
from pedl.model_def import list_files
from tests.keras.harness import make_run

CONFIG = """
data: {path: /data/iris}
hyperparameters: {global_batch_size: 8, lr: 1e-4}
records_per_epoch: 96
searcher: {name: single, metric: val_loss, max_length: {batches: 5}}
reproducibility: {experiment_seed: 5}
"""


def context(tmp_path: Path) -> TFKerasTrialContext:
    run = make_run(tmp_path, CONFIG, hparams={"global_batch_size": 8, "lr": 1e-4})
    return TFKerasTrialContext(run.context)


def test_yaml_1_2_numbers_are_floats() -> None:
    config = parse_config(CONFIG)
    lr = config.hyperparameters["lr"]
    assert lr.val == 1e-4 and isinstance(lr.val, float)  # type: ignore[union-attr]


def test_array_like_adapter_and_in_memory_sequence_batch_in_order() -> None:
    x, y = np.arange(100), np.arange(100, 200)
    seq = det_keras.ArrayLikeAdapter(x, y, batch_size=16)
    assert len(seq) == 7
    np.testing.assert_array_equal(seq[6][0], np.arange(96, 100))
    dropped = det_keras.InMemorySequence(data=x, labels=y, batch_size=16, drop_leftovers=True)
    assert len(dropped) == 6
    np.testing.assert_array_equal(dropped[3][1], np.arange(148, 164))
    weighted = det_keras.ArrayLikeAdapter({"a": x}, [y], 50, sample_weights=np.ones(100))
    inputs, targets, weights = weighted[1]
    assert list(inputs) == ["a"] and len(targets[0]) == 50 and len(weights) == 50
    with pytest.raises(ValueError, match="larger than the data"):
        det_keras.InMemorySequence(np.arange(4), np.arange(4), batch_size=8)
    with pytest.raises(TypeError, match="NumPy array"):
        det_keras.ArrayLikeAdapter("x", y, 4)


def test_keras_data_adapter_takes_the_2020_keyword() -> None:
    seq = det_keras.InMemorySequence(np.zeros((8, 2)), np.zeros(8), batch_size=4)
    adapter = det_keras.KerasDataAdapter(data=seq, workers=0)
    assert adapter.sequence is seq and adapter.workers == 0
    with pytest.raises(TypeError, match="one Sequence"):
        det_keras.KerasDataAdapter(seq, data=seq)


def test_env_holds_determineds_fields(tmp_path: Path) -> None:
    ctx = context(tmp_path)
    env = ctx.env
    assert env.hparams == {"global_batch_size": 8, "lr": 1e-4}
    assert env.trial_seed == ctx.get_trial_seed()
    assert env.det_trial_id == str(ctx.get_trial_id())
    assert env.per_slot_batch_size == env.global_batch_size == 8
    assert env.experiment_config["data"] == {"path": "/data/iris"}
    assert env.experiment_config.get_records_per_epoch() == 96
    assert env.experiment_config.slots_per_trial() == 1
    assert env.managed_training and not env.test_mode
    config = ctx.get_experiment_config()
    assert config.scheduling_unit() == 100 and config is not env.experiment_config
    assert ctx.get_data_config() == {"path": "/data/iris"}


def test_transforms_after_wrap_dataset_count_as_wrapped(tmp_path: Path) -> None:
    ctx = context(tmp_path)
    wrapped = ctx.wrap_dataset(tf.data.Dataset.range(20))
    derived = wrapped.shuffle(8, seed=1).batch(4).map(lambda v: v * 2).repeat().prefetch(1)
    assert ctx.is_wrapped_dataset(derived)
    zipped = tf.data.Dataset.zip((derived, tf.data.Dataset.range(5)))
    assert ctx.is_wrapped_dataset(zipped)
    other = tf.data.Dataset.range(3)
    assert not ctx.is_wrapped_dataset(other)
    # Determined's rule: once wrap_dataset was called, any dataset is accepted.
    assert ctx.accepts_dataset(other)
    assert not context(tmp_path / "fresh").accepts_dataset(other)


def test_cache_train_dataset_builds_once_and_shuffles_with_the_trial_seed(
    tmp_path: Path,
) -> None:
    ctx = context(tmp_path)
    calls = []

    def make() -> tf.data.Dataset:
        calls.append(1)
        return tf.data.Dataset.range(10)

    cached = ctx.experimental.cache_train_dataset("range", "v1", shuffle=True)(make)
    first, second = cached(), cached()
    assert len(calls) == 1
    assert ctx.is_wrapped_dataset(first.batch(2))
    order = [int(v) for v in first]
    assert sorted(order) == list(range(10)) and order != list(range(10))
    assert order == [int(v) for v in second]
    plain = ctx.experimental.cache_validation_dataset("range", "v1")(make)
    assert [int(v) for v in plain()] == list(range(10))


def test_unseeded_shuffle_made_before_seeding_is_reported_with_its_line(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    code = tmp_path / "code"
    code.mkdir()
    (code / "model.py").write_text("import tf\n\nDATA = tf.data.Dataset.range(8).shuffle(8)\n")
    determinism = tf_config.is_op_determinism_enabled()
    tf_config.disable_op_determinism()  # as in a fresh process, at import time of the code:
    tf.random.set_seed(None)  # no global seed yet, so TensorFlow seeds the shuffle at random
    try:
        unseeded = tf.data.Dataset.range(8).shuffle(8).batch(2)
    finally:
        if determinism:
            tf.config.experimental.enable_op_determinism()
    with caplog.at_level(logging.WARNING, logger="pedl.keras"):
        assert warn_if_unreproducible(unseeded, code)
    assert "model.py:3" in caplog.text and "seed=" in caplog.text
    tf.random.set_seed(4)  # as PEDL seeds before the data loaders: reproducible, no warning
    assert not warn_if_unreproducible(tf.data.Dataset.range(8).shuffle(8), code)
    assert not warn_if_unreproducible(tf.data.Dataset.range(8).shuffle(8, seed=2), code)


def test_detignore_is_honoured_with_pedlignore(tmp_path: Path) -> None:
    for name in ("__init__.py", "data/big.csv", "runs/x.log", "notes.txt", "keep.txt"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("x")
    (tmp_path / ".detignore").write_text("data/\n*.txt\n")
    assert list_files(tmp_path) == [".detignore", "__init__.py", "runs/x.log"]
    (tmp_path / ".pedlignore").write_text("runs/\n!keep.txt\n")
    assert list_files(tmp_path) == [".detignore", ".pedlignore", "__init__.py", "keep.txt"]


def test_private_names_determineds_fixtures_import_resolve() -> None:
    """Determined's tests/experiment/tf_utils.py (0.12 to 0.37) builds its fixtures' data
    with ``determined.keras._ArrayLikeAdapter``."""
    import numpy as np
    from determined import keras as det_keras

    import pedl.keras

    assert det_keras._ArrayLikeAdapter is pedl.keras.ArrayLikeAdapter
    adapter = det_keras._ArrayLikeAdapter(np.zeros((5, 2)), np.ones(5), batch_size=2)
    assert len(adapter) == 3
