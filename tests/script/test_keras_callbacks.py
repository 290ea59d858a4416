"""Keras's own callbacks in a script (``ModelCheckpoint(save_best_only=True)`` then
``load_model`` after ``fit``, ``EarlyStopping(restore_best_weights=True)``,
``ReduceLROnPlateau``, ``LearningRateScheduler``, ``CSVLogger``, ``TensorBoard(log_dir)``,
``BackupAndRestore``), run in local mode: they see ``fit``'s epochs with its logs, and a run
paused mid-``fit`` (SIGTERM, as ``pedl experiment create --local`` is stopped) or crashed
(an error in the script's callback: local mode restarts the trial from its latest checkpoint)
and resumed ends as the uninterrupted run: the same weights bitwise, the same best model at the
checkpoint's path, the same CSV rows (none twice), learning rate, early stop, TensorBoard
scalars and History."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import tensorflow as tf

from pedl.local import LocalExperiment
from pedl.model_def import unload
from pedl.vocabulary import MetricKind
from tests import local_record as record

pytestmark = pytest.mark.slow

# 96 training records in batches of 16: 6 batches an epoch, 12 epochs at most. Noisy labels
# and a large learning rate: the validation loss stalls, so the learning rate is cut and the
# training stops early. A callback pauses (SIGTERM) or crashes the run once, after the batch a
# file names (counted over the fit call's batches, as its state is resumed).
SCRIPT = textwrap.dedent(
    """
    import json
    import os
    import signal

    import keras
    import numpy as np

    rng = np.random.default_rng(0)
    x = rng.normal(size=(160, 4)).astype("float32")
    noise = rng.normal(scale=1.5, size=160)
    y = (x[:, 0] + x[:, 1] + noise > 0).astype("int32")
    x_train, y_train, x_val, y_val = x[:96], y[:96], x[96:], y[96:]


    class Interrupt(keras.callbacks.Callback):
        def __init__(self):
            super().__init__()
            self.seen = 0

        def on_train_batch_end(self, batch, logs=None):
            self.seen += 1
            path = os.environ.get("INTERRUPT_AT", "")
            if path and os.path.exists(path):
                with open(path) as f:
                    how, at = f.read().split()
                if int(at) == self.seen:
                    os.remove(path)
                    if how == "pause":
                        os.kill(os.getpid(), signal.SIGTERM)
                    else:
                        raise RuntimeError("the script crashed")


    out = os.environ["SCRIPT_OUT"]
    model = keras.Sequential(
        [
            keras.Input((4,)),
            keras.layers.Dense(16, activation="relu"),
            keras.layers.Dropout(0.2),
            keras.layers.Dense(2, activation="softmax"),
        ]
    )
    model.compile(
        keras.optimizers.Adam(0.05), "sparse_categorical_crossentropy", metrics=["accuracy"]
    )
    best_path = os.path.join(out, "best.keras")
    early = keras.callbacks.EarlyStopping(
        monitor="val_loss", patience=4, min_delta=0.005, restore_best_weights=True
    )
    plateau = keras.callbacks.ReduceLROnPlateau(
        monitor="val_loss", factor=0.5, patience=1, min_delta=0.01, cooldown=1
    )
    checkpoint = keras.callbacks.ModelCheckpoint(best_path, save_best_only=True)
    history = model.fit(
        x_train,
        y_train,
        batch_size=16,
        epochs=12,
        validation_data=(x_val, y_val),
        callbacks=[
            Interrupt(),
            keras.callbacks.LearningRateScheduler(lambda e, lr: lr if e < 2 else lr * 0.9),
            plateau,
            early,
            checkpoint,
            keras.callbacks.CSVLogger(os.path.join(out, "log.csv")),
            keras.callbacks.TensorBoard(os.path.join(out, "tensorboard")),
            keras.callbacks.BackupAndRestore(os.path.join(out, "backup")),
        ],
    )
    # After fit, as keras.io's examples do: the best model saved, loaded again.
    best = keras.models.load_model(best_path)
    np.savez(os.path.join(out, "weights.npz"), *model.get_weights())
    np.savez(os.path.join(out, "best.npz"), *best.get_weights())
    with open(os.path.join(out, "after.json"), "w") as f:
        json.dump(
            {
                "history": history.history,
                "learning_rate": float(model.optimizer.learning_rate),
                "early": [early.wait, float(early.best), early.best_epoch, early.stopped_epoch],
                "plateau": [plateau.wait, plateau.cooldown_counter, float(plateau.best)],
                "checkpoint_best": float(checkpoint.best),
                "backup": os.path.exists(os.path.join(out, "backup")),
                "best_val_loss": best.evaluate(x_val, y_val, verbose=0, return_dict=True)[
                    "loss"
                ],
            },
            f,
        )
    """
)

CONFIG = """
name: keras-callbacks
entrypoint: python3 train.py
searcher: {name: single, metric: val_loss}
min_checkpoint_period: {batches: 12}
reproducibility: {experiment_seed: 7}
"""


@pytest.fixture(autouse=True)
def _unload() -> None:
    unload()


def run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, interrupt: str | None = None
) -> dict[str, Any]:
    """Run the script in local mode (resumed after a pause); what it left after its fit."""
    model = tmp_path / "model"
    model.mkdir()
    (model / "train.py").write_text(SCRIPT)
    (tmp_path / "const.yaml").write_text(CONFIG)
    out = tmp_path / "out"
    out.mkdir()
    monkeypatch.setenv("SCRIPT_OUT", str(out))
    marker = tmp_path / "interrupt_at.txt"
    if interrupt is not None:
        marker.write_text(interrupt)
    monkeypatch.setenv("INTERRUPT_AT", str(marker))
    experiment = LocalExperiment.create(tmp_path / "const.yaml", model, tmp_path / "runs")
    directory = experiment.directory
    try:
        summary = experiment.run()
    finally:
        experiment.close()
    if interrupt is not None and interrupt.startswith("pause"):
        assert summary.state == "PAUSED", [t.error for t in summary.trials]
        assert not (out / "after.json").exists()
        unload()
        experiment = LocalExperiment(directory)
        try:
            summary = experiment.run()
        finally:
            experiment.close()
    assert summary.state == "COMPLETED", [t.error for t in summary.trials]
    assert not marker.exists()
    after: dict[str, Any] = json.loads((out / "after.json").read_text())
    after["weights"] = [a for _, a in sorted(np.load(out / "weights.npz").items())]
    after["best"] = [a for _, a in sorted(np.load(out / "best.npz").items())]
    after["csv"] = (out / "log.csv").read_text()
    after["tensorboard"] = scalars(out / "tensorboard")
    (trial,) = record.trials(directory)
    after["validations"] = record.metric_epochs(directory, trial.id, MetricKind.VALIDATION)
    after["restarts"] = trial.restarts
    return after


def scalars(log_dir: Path) -> dict[tuple[str, str, int], float]:
    """The epoch scalars TensorBoard's event files hold, by (run, tag, step); the last
    written wins (a resumed run writes a new file)."""
    found: dict[tuple[str, str, int], float] = {}
    for path in sorted(log_dir.rglob("events.out.tfevents.*")):
        run = path.parent.name
        for event in tf.compat.v1.train.summary_iterator(str(path)):
            for value in event.summary.value:
                if value.tag.startswith("epoch_"):
                    number = float(tf.make_ndarray(value.tensor))
                    found[(run, value.tag, event.step)] = number
    return found


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    with pytest.MonkeyPatch.context() as monkeypatch:
        return run(tmp_path_factory.mktemp("uninterrupted"), monkeypatch)


def test_the_callbacks_see_keras_epochs(uninterrupted: dict[str, Any]) -> None:
    """Each epoch validates and ends with its logs: the learning rate is cut, the training
    stops early, the best model is at the checkpoint's path and the model ends with its
    weights; the CSV file has a row per epoch with History's values; BackupAndRestore left no
    backup."""
    after = uninterrupted
    history = after["history"]
    epochs = len(history["loss"])
    assert 3 < epochs < 12, history  # stopped early
    assert after["early"][3] == epochs - 1  # stopped_epoch
    assert [e for _, e in after["validations"]] == [float(e) for e in range(1, epochs + 1)]
    assert len(set(history["learning_rate"])) > 2  # scheduled, then cut on the plateau
    # An epoch's logs have the rate it trained with (ReduceLROnPlateau may cut it after).
    assert after["learning_rate"] <= history["learning_rate"][-1]
    best_epoch = after["early"][2]
    assert min(history["val_loss"]) == history["val_loss"][best_epoch]
    assert after["checkpoint_best"] == pytest.approx(history["val_loss"][best_epoch])
    assert after["best_val_loss"] == pytest.approx(history["val_loss"][best_epoch], rel=1e-5)
    for restored, best in zip(after["weights"], after["best"], strict=True):
        np.testing.assert_array_equal(restored, best)  # restore_best_weights
    rows = after["csv"].splitlines()
    assert rows[0].split(",") == ["epoch", *sorted(history)]
    assert [int(r.split(",")[0]) for r in rows[1:]] == list(range(epochs))
    val_loss = rows[0].split(",").index("val_loss")
    assert [float(r.split(",")[val_loss]) for r in rows[1:]] == pytest.approx(history["val_loss"])
    assert {step for run, tag, step in after["tensorboard"] if tag == "epoch_loss"} == set(
        range(epochs)
    )
    assert after["backup"] is False


@pytest.mark.parametrize(
    "interrupt",
    ["pause 20", "crash 28"],
    ids=["paused-and-resumed", "crashed-and-restarted"],
)
def test_interrupted_and_resumed_the_callbacks_end_as_uninterrupted(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    uninterrupted: dict[str, Any],
    interrupt: str,
) -> None:
    """Paused after batch 20 (checkpointed at 24, the chunk's end), or crashed after batch
    28 (restarted from the checkpoint at 24, the CSV row and best model of epoch 4 written
    before the crash replaced by the checkpoint's): the same weights bitwise, the same best
    model, CSV rows, learning rate, early stop and plateau state, TensorBoard scalars and
    History as the uninterrupted run."""
    after = run(tmp_path, monkeypatch, interrupt)
    plain = uninterrupted
    assert after["restarts"] == (1 if interrupt.startswith("crash") else 0)
    for name in ("weights", "best"):
        for resumed, reference in zip(after[name], plain[name], strict=True):
            np.testing.assert_array_equal(resumed, reference)
    for name in ("history", "learning_rate", "early", "plateau", "checkpoint_best", "csv"):
        assert after[name] == plain[name], name
    assert after["tensorboard"] == plain["tensorboard"]
    assert after["validations"] == plain["validations"]
