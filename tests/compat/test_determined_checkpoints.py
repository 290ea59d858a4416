"""Checkpoints that Determined's TFKerasTrial wrote load with ``load_model_from_checkpoint_path``.

Each checkpoint directory is laid out as Determined wrote it: the model definition in
``code/`` and either ``load_data.json`` with the weights as a TensorFlow checkpoint
(``determined-keras-model-weights``, tf.keras' object names ``layer_with_weights-N/...``),
or ``metadata.json`` with format ``h5`` (``determined-keras-model.h5``), ``saved_weights``
or ``saved_model``. The weights are written here with TensorFlow and Keras' legacy H5 writer.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import keras
import numpy as np
import pytest
import tensorflow as tf
from determined.keras import load_model_from_checkpoint_path

from pedl.keras import CheckpointFormatError

from .reference import MODELS, dense

CONFIG: dict[str, Any] = {
    "description": "iris",
    "entrypoint": "model_def:IrisTrial",
    "hyperparameters": {"global_batch_size": {"type": "const", "val": 12}},
    "searcher": {"name": "single", "metric": "val_accuracy", "max_length": {"epochs": 3}},
    "data_layer": {"type": "shared_fs", "container_storage_path": None},
    "a_field_of_a_later_determined": {"x": 1},
}
HPARAMS = {"global_batch_size": 12, "lr": 0.05}


def checkpoint_dir(tmp_path: Path) -> Path:
    root = tmp_path / "checkpoint"
    (root / "code").mkdir(parents=True)
    shutil.copy(MODELS / "det2020_iris" / "__init__.py", root / "code" / "model_def.py")
    return root


def trained_weights() -> list[np.ndarray]:
    rng = np.random.default_rng(3)
    return [rng.normal(size=w.shape).astype("float32") for w in dense(4, 16, 3).weights]


def assert_loaded(model: Any, weights: list[np.ndarray]) -> None:
    assert isinstance(model, keras.Model)
    for loaded, expected in zip(model.weights, weights, strict=True):
        np.testing.assert_array_equal(np.asarray(loaded), expected)


def write_tf_checkpoint(prefix: Path, weights: list[np.ndarray]) -> None:
    """What tf.keras 2's ``model.save_weights(prefix)`` wrote for this Sequential model."""
    layers = {}
    for i in range(2):
        layer = tf.Module()
        layer.kernel = tf.Variable(weights[2 * i])
        layer.bias = tf.Variable(weights[2 * i + 1])
        layers[f"layer_with_weights-{i}"] = layer
    tf.train.Checkpoint(**layers).write(str(prefix))


def test_load_data_json_with_tensorflow_checkpoint_weights(tmp_path: Path) -> None:
    root = checkpoint_dir(tmp_path)
    weights = trained_weights()
    write_tf_checkpoint(root / "determined-keras-model-weights", weights)
    load_data = {
        "trial_type": "TFKerasTrial",
        "experiment_config": CONFIG,
        "hparams": HPARAMS,
        "trial_cls_spec": "model_def:IrisTrial",
        "is_trainable": True,
    }
    (root / "load_data.json").write_text(json.dumps(load_data))
    assert_loaded(load_model_from_checkpoint_path(str(root)), weights)


def test_metadata_json_with_h5_weights(tmp_path: Path) -> None:
    root = checkpoint_dir(tmp_path)
    weights = trained_weights()
    model = dense(4, 16, 3)
    model.set_weights(weights)
    model.save(str(root / "determined-keras-model.h5"))  # Keras' legacy H5 format
    metadata = {"format": "h5", "framework": "tensorflow-2.4.1", "experiment_config": CONFIG}
    (root / "metadata.json").write_text(json.dumps({**metadata, "hparams": HPARAMS}))
    assert_loaded(load_model_from_checkpoint_path(root), weights)


def test_metadata_json_saved_model_with_tags(tmp_path: Path) -> None:
    root = tmp_path / "checkpoint"
    module = tf.Module()
    module.w = tf.Variable([[2.0], [3.0]])
    module.predict = tf.function(
        lambda x: {"y": tf.matmul(x, module.w)},
        input_signature=[tf.TensorSpec([None, 2], tf.float32)],
    )
    tf.saved_model.save(
        module, str(root / "saved_model_dir"), signatures={"serving_default": module.predict}
    )
    (root / "metadata.json").write_text(json.dumps({"format": "saved_model"}))
    loaded = load_model_from_checkpoint_path(root, tags=["serve"])
    out = loaded.signatures["serving_default"](tf.constant([[1.0, 1.0]]))
    np.testing.assert_allclose(out["y"].numpy(), [[5.0]])


def test_weights_that_do_not_fit_and_unknown_directories_are_explained(tmp_path: Path) -> None:
    root = checkpoint_dir(tmp_path)
    write_tf_checkpoint(root / "determined-keras-model-weights", trained_weights()[:2] * 2)
    load_data = {"experiment_config": CONFIG, "hparams": HPARAMS, "trial_cls_spec": None}
    (root / "load_data.json").write_text(json.dumps(load_data))
    with pytest.raises(CheckpointFormatError, match=r"has shape \(16, 3\) in the model"):
        load_model_from_checkpoint_path(root)
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "notes.txt").write_text("x")
    with pytest.raises(CheckpointFormatError, match=r"found notes.txt"):
        load_model_from_checkpoint_path(empty)
