"""Keras 2 mode for Trial classes: a TFKerasTrial written for TensorFlow <= 2.15's ``tf.keras``
(a ``tf.keras.optimizers.legacy`` optimizer with ``lr=`` and ``decay=``, metrics given to
``compile`` positionally) trains and resumes exactly with ``TF_USE_LEGACY_KERAS=1``
(``make test`` runs the ``keras2`` tests again in that mode); under Keras 3 each such API fails
with one line saying how to switch, at the user's line."""

from __future__ import annotations

import json
import logging
import os
import pickle
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from pedl import TrialOutcome
from pedl.config import parse_config
from pedl.exec import run_attempt
from pedl.keras import _keras
from pedl.keras._keras import LEGACY
from pedl.vocabulary import MetricKind
from tests.waits import scaled

from .harness import BASE_CONFIG, Run, make_run, train

ROOT = Path(__file__).parents[2]

MODEL = """
import numpy as np
import tensorflow as tf

from pedl.keras import TFKerasTrial

API = "{api}"


class Keras2Trial(TFKerasTrial):
    def build_model(self):
        model = self.context.wrap_model(
            tf.keras.Sequential(
                [
                    tf.keras.Input((4,)),
                    tf.keras.layers.Dense(8, activation="relu"),
                    tf.keras.layers.Dropout(0.3),
                    tf.keras.layers.Dense(2, activation="softmax"),
                ]
            )
        )
        if API == "legacy":
            optimizer = tf.keras.optimizers.legacy.RMSprop(lr=0.01, decay=1e-4)  # legacy
        elif API == "lr":
            optimizer = tf.keras.optimizers.RMSprop(lr=0.01)  # lr
        else:
            optimizer = tf.keras.optimizers.RMSprop(0.01)
        optimizer = self.context.wrap_optimizer(optimizer)
        model.compile(optimizer, "sparse_categorical_crossentropy", ["accuracy"])
        return model

    def keras_callbacks(self):
        # A plain Keras callback: it sees the epochs of one long fit, across the resume too.
        return [tf.keras.callbacks.LearningRateScheduler(lambda epoch, lr: 0.01 * 0.5**epoch)]

    def build_training_data_loader(self):
        rng = np.random.default_rng(0)
        x = rng.normal(size=(100, 4)).astype("float32")
        return x, (x[:, 0] + x[:, 1] > 0).astype("int32")

    def build_validation_data_loader(self):
        rng = np.random.default_rng(1)
        x = rng.normal(size=(40, 4)).astype("float32")
        return x, (x[:, 0] + x[:, 1] > 0).astype("int32")
"""


def keras2_model(tmp_path: Path, api: str, **kwargs: Any) -> tuple[Run, Any]:
    run = make_run(tmp_path, **kwargs)
    (tmp_path / "code" / "model.py").write_text(MODEL.format(api=api))
    (tmp_path / "code" / "__init__.py").write_text("from .model import Keras2Trial\n")
    return run, tmp_path / "code"


@pytest.mark.skipif(LEGACY, reason="Keras 3 only: the hint for Keras 2 code")
@pytest.mark.parametrize(
    ("api", "expected", "line"),
    [
        ("legacy", "tf.keras.optimizers.legacy is Keras 2 code", "# legacy"),
        ("lr", "an optimizer's lr= argument is Keras 2 code", "# lr"),
        ("positional", "model.compile() got ['accuracy'] as its third positional", None),
    ],
)
def test_keras2_code_under_keras3_fails_in_one_line_saying_how_to_switch(
    tmp_path: Path, api: str, expected: str, line: str | None
) -> None:
    run, code_dir = keras2_model(tmp_path, api)
    result = run_attempt(code_dir, "model:Keras2Trial", lambda: run.context)
    assert result.outcome is TrialOutcome.ERRORED
    assert result.error is not None
    summary = result.error.summary()
    assert "\n" not in summary
    assert expected in summary, summary
    assert "set TF_USE_LEGACY_KERAS=1 in environment.environment_variables" in summary
    if line is not None:
        (number,) = [
            i for i, text in enumerate(MODEL.format(api=api).splitlines(), 1) if line in text
        ]
        assert result.error.location == f"model.py:{number}"


LEARNING_RATES: list[float] = []


def final_variables(run: Run, code_dir: Path, **kwargs: Any) -> list[np.ndarray]:
    from pedl import model_def
    from pedl.keras import TFKerasTrialController

    definition = model_def.load(code_dir, "model:Keras2Trial")
    controller = TFKerasTrialController.from_definition(definition, run.context)
    assert controller.run() is kwargs.get("outcome", TrialOutcome.COMPLETED)
    LEARNING_RATES.append(float(controller.model.optimizer.learning_rate))
    return [np.asarray(v) for v in controller.model.variables]


@pytest.mark.keras2
@pytest.mark.skipif(not LEGACY, reason="Keras 2 mode (TF_USE_LEGACY_KERAS=1) only")
def test_keras2_trial_trains_and_resumes_bitwise_exactly(tmp_path: Path) -> None:
    overrides = ("searcher.max_length.batches=18", "scheduling_unit=5", "checkpoint_policy=none")
    baseline, code_dir = keras2_model(tmp_path / "a", "legacy", overrides=overrides)
    expected = final_variables(baseline, code_dir)
    assert baseline.recorder.batches(MetricKind.VALIDATION) == [18]

    boundaries = iter(range(100))
    first, code_dir = keras2_model(
        tmp_path / "b", "legacy", overrides=overrides, preempt=lambda: next(boundaries) == 2
    )
    final_variables(first, code_dir, outcome=TrialOutcome.PREEMPTED)
    second, code_dir = keras2_model(
        tmp_path / "b",
        "legacy",
        overrides=overrides,
        latest_checkpoint=first.recorder.checkpoints[-1][0],
        recorder=first.recorder,
    )
    resumed = final_variables(second, code_dir)
    assert len(resumed) == len(expected)
    for a, b in zip(resumed, expected, strict=True):
        np.testing.assert_array_equal(a, b)
    # The scheduler's rate for epoch 2 (batches 14 to 18 of 7 per epoch), before and after.
    assert LEARNING_RATES[0] == LEARNING_RATES[-1] == pytest.approx(0.0025)
    assert first.recorder.metrics == baseline.recorder.metrics

    # The checkpoint loads in a fresh Keras 2 process, with the trained weights.
    path = second.storage.path_of(second.recorder.checkpoints[-1][0])
    load = (
        "import sys, numpy as np\n"
        "from pedl.keras import load_model_from_checkpoint_path\n"
        "model = load_model_from_checkpoint_path(sys.argv[1])\n"
        "total = float(sum(np.sum(w) for w in model.get_weights()))\n"
        "print(type(model).__module__.split('.')[0], total)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", load, str(path)],
        capture_output=True,
        text=True,
        timeout=scaled(300),
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    module, total = done.stdout.split()[-2:]
    assert module == "tf_keras"
    expected_total = float(sum(np.sum(w) for w in expected))
    assert abs(float(total) - expected_total) < 1e-3, (total, expected_total)


@pytest.mark.keras2
@pytest.mark.skipif(not LEGACY, reason="Keras 2 mode (TF_USE_LEGACY_KERAS=1) only")
def test_the_trial_log_says_a_determined_image_turned_keras2_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from tests.keras.trials import SmallTrial

    image = "determinedai/tensorflow-ngc:0.38.1"
    monkeypatch.setenv("PEDL_KERAS2_IMAGE", image)
    monkeypatch.setattr(_keras, "_announced", False)
    caplog.set_level(logging.INFO, logger="pedl.keras")
    train(SmallTrial, make_run(tmp_path, overrides=("searcher.max_length.batches=2",)))
    assert f"Keras 2 mode (TF_USE_LEGACY_KERAS=1): environment.image {image}" in caplog.text


def test_a_checkpoint_of_the_other_keras_is_refused_naming_the_switch(tmp_path: Path) -> None:
    from pedl.keras import CheckpointFormatError, load_model_from_checkpoint_path

    other = "3.15.1" if LEGACY else "2.21.0 (Keras 2, tf-keras)"
    (tmp_path / "metadata.json").write_text(
        json.dumps({"format": "pedl.keras/1", "keras_version": other})
    )
    with pytest.raises(CheckpointFormatError, match="TF_USE_LEGACY_KERAS"):
        load_model_from_checkpoint_path(tmp_path)


def test_a_determined_tensorflow_image_puts_a_trial_class_in_keras2_mode() -> None:
    image = "determinedai/tensorflow-ngc:0.38.1"
    config = parse_config(
        BASE_CONFIG + f"entrypoint: model:Trial\nenvironment: {{image: {image}}}\n"
    )
    assert config.environment.env_dict(gpu=False) == {
        "TF_USE_LEGACY_KERAS": "1",
        "PEDL_KERAS2_IMAGE": image,
    }
    keras3 = parse_config(
        BASE_CONFIG + "entrypoint: model:Trial\n"
        f"environment: {{image: {image}, environment_variables: [TF_USE_LEGACY_KERAS=0]}}\n"
    )
    assert keras3.environment.env_dict(gpu=False) == {"TF_USE_LEGACY_KERAS": "0"}


SCRIPT = """
import numpy as np
import tensorflow as tf

rng = np.random.default_rng(0)
x = rng.normal(size=(64, 4)).astype("float32")
y = (x[:, 0] + x[:, 1] > 0).astype("int32")
model = tf.keras.Sequential(
    [tf.keras.Input((4,)), tf.keras.layers.Dropout(0.2), tf.keras.layers.Dense(2, "softmax")]
)
optimizer = tf.keras.optimizers.legacy.Adam(lr=0.01)
model.compile(optimizer, "sparse_categorical_crossentropy", ["accuracy"])
model.fit(x, y, batch_size=16, epochs=2, validation_data=(x[:32], y[:32]), verbose=0)
"""


@pytest.mark.keras2
@pytest.mark.skipif(not LEGACY, reason="Keras 2 mode (TF_USE_LEGACY_KERAS=1) only")
def test_keras2_script_without_determined_callback_trains_as_a_trial(tmp_path: Path) -> None:
    run = make_run(tmp_path, overrides=("searcher.max_length.batches=6", "scheduling_unit=3"))
    (tmp_path / "code" / "train.py").write_text(SCRIPT)
    result = run_attempt(tmp_path / "code", "python3 train.py", lambda: run.context)
    assert result.outcome is TrialOutcome.COMPLETED, result.error
    # Chunks of 3 batches, cut where an epoch of the script's data (4 batches) ends: fit
    # validates every epoch, as Keras does.
    assert run.recorder.batches(MetricKind.TRAINING) == [3, 4, 6]
    assert run.recorder.batches(MetricKind.VALIDATION) == [4, 6]
    assert "val_accuracy" in run.recorder.metrics[(MetricKind.VALIDATION, 6)]
    storage_id, batches = run.recorder.checkpoints[-1]
    assert batches == 6
    metadata = json.loads((run.storage.path_of(storage_id) / "metadata.json").read_text())
    assert metadata["keras_version"].endswith("(Keras 2, tf-keras)")


@pytest.mark.keras2
def test_a_model_of_the_other_keras_is_refused_naming_the_switch() -> None:
    """A model built with the Keras this process does not train with (Keras 3's ``keras`` in
    Keras 2 mode, ``tf_keras`` on Keras 3) is refused saying which and how to switch."""
    import keras as keras3
    import tf_keras

    other, own = (keras3, tf_keras) if LEGACY else (tf_keras, keras3)
    model = other.Sequential([other.Input((2,)), other.layers.Dense(1)])
    why = _keras.other_keras(model)
    assert why is not None
    assert ("unset TF_USE_LEGACY_KERAS" if LEGACY else "set TF_USE_LEGACY_KERAS=1") in why
    assert _keras.other_keras(own.Sequential([own.Input((2,)), own.layers.Dense(1)])) is None

    class Mine(other.Model):  # a user's subclass, defined outside either package
        def call(self, inputs):  # type: ignore[no-untyped-def]
            return inputs

    assert _keras.other_keras(Mine()) == why


TEXT_MODEL = """
import numpy as np
import tensorflow as tf

from pedl.keras import TFKerasTrial

WORDS = np.array(["good film", "bad film", "great movie", "awful movie"] * 25)
LABELS = np.array([1, 0, 1, 0] * 25, dtype="int32")


class TextTrial(TFKerasTrial):
    def build_model(self):
        vectorize = tf.keras.layers.TextVectorization(max_tokens=10, output_sequence_length=2)
        vectorize.adapt(WORDS)
        model = self.context.wrap_model(
            tf.keras.Sequential(
                [
                    tf.keras.Input((1,), dtype=tf.string),
                    vectorize,
                    tf.keras.layers.Embedding(10, 4),
                    tf.keras.layers.GlobalAveragePooling1D(),
                    tf.keras.layers.Dense(2, activation="softmax"),
                ]
            )
        )
        optimizer = self.context.wrap_optimizer(tf.keras.optimizers.Adam(0.01))
        model.compile(optimizer, "sparse_categorical_crossentropy", ["accuracy"])
        return model

    def build_training_data_loader(self):
        return WORDS[:, None], LABELS

    def build_validation_data_loader(self):
        return WORDS[:40, None], LABELS[:40]
"""


def text_variables(run: Run, code_dir: Path, outcome: TrialOutcome) -> list[np.ndarray]:
    from pedl import model_def
    from pedl.keras import TFKerasTrialController

    definition = model_def.load(code_dir, "model:TextTrial")
    controller = TFKerasTrialController.from_definition(definition, run.context)
    assert controller.run() is outcome
    return [np.asarray(v) for v in controller.model.get_weights()]


@pytest.mark.keras2
@pytest.mark.skipif(not LEGACY, reason="Keras 2 mode (TF_USE_LEGACY_KERAS=1) only")
def test_a_keras2_text_model_checkpoints_its_vocabulary_and_resumes_exactly(
    tmp_path: Path,
) -> None:
    """TextVectorization's table is a tf-keras weight that is no variable (it held the
    AttributeError "'VocabWeightHandler' object has no attribute 'numpy'" at the checkpoint)."""
    overrides = ("searcher.max_length.batches=12", "scheduling_unit=4", "checkpoint_policy=none")

    def text_run(directory: Path, **kwargs: Any) -> tuple[Run, Path]:
        run = make_run(directory, overrides=overrides, **kwargs)
        (directory / "code" / "model.py").write_text(TEXT_MODEL)
        return run, directory / "code"

    baseline, code_dir = text_run(tmp_path / "a")
    expected = text_variables(baseline, code_dir, TrialOutcome.COMPLETED)
    boundaries = iter(range(100))
    first, code_dir = text_run(tmp_path / "b", preempt=lambda: next(boundaries) == 1)
    text_variables(first, code_dir, TrialOutcome.PREEMPTED)
    storage_id = first.recorder.checkpoints[-1][0]
    tables = first.storage.path_of(storage_id) / "state" / "lookup_tables.pkl"
    with open(tables, "rb") as f:
        (table,) = pickle.load(f)
    words = {word for tensor in table for word in np.asarray(tensor).reshape(-1).tolist()}
    assert {b"good", b"film", b"movie"} <= words, table
    second, code_dir = text_run(
        tmp_path / "b", latest_checkpoint=storage_id, recorder=first.recorder
    )
    resumed = text_variables(second, code_dir, TrialOutcome.COMPLETED)
    assert len(resumed) == len(expected)
    for got, want in zip(resumed, expected, strict=True):
        np.testing.assert_array_equal(got, want)
