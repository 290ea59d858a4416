"""Iris in Determined 0.38's TF-Keras script form, written for Keras 2 (``tf.keras`` of
TensorFlow <= 2.15; here ``TF_USE_LEGACY_KERAS=1``): ``tensorflow.keras.optimizers.legacy``
with ``lr=``/``decay=``, ``compile`` with positional metrics,
``det.core.DistributedContext.from_tf_config()``, ``det.keras.DeterminedCallback`` and
``det.keras.TensorBoard``; data from scikit-learn (no download). With
``PEDL_TEST_HOLD_FOR_PAUSE=1`` a fresh run waits after its first epoch until it is asked to
stop, so that a test can pause it mid-run however slow the machine."""

import argparse
import logging
import os
import time

import determined as det
import determined.keras
import numpy as np
from tensorflow.keras import callbacks, layers, losses, metrics, models, utils
from tensorflow.keras.optimizers import legacy


def load_data():
    from sklearn.datasets import load_iris

    x, y = load_iris(return_X_y=True)
    order = np.random.default_rng(0).permutation(len(x))
    x = ((x - x.mean(0)) / x.std(0)).astype("float32")[order]
    y = utils.to_categorical(y[order], num_classes=3)
    return (x[:120], y[:120]), (x[120:], y[120:])


def hold_for_pause(core_context, checkpoint, epoch):
    if os.environ.get("PEDL_TEST_HOLD_FOR_PAUSE") != "1" or checkpoint is not None or epoch:
        return
    deadline = time.monotonic() + 600
    while not core_context.preempt.should_preempt() and time.monotonic() < deadline:
        time.sleep(0.05)


def main(core_context, strategy, checkpoint, continue_id, hparams, epochs):
    (train_x, train_y), validation_data = load_data()
    with strategy.scope():
        inputs = layers.Input(shape=(4,))
        dense1 = layers.Dense(hparams["layer1_dense_size"])(inputs)
        dense2 = layers.Dense(3, activation="softmax")(dense1)
        model = models.Model(inputs=inputs, outputs=dense2)
        optimizer = legacy.RMSprop(
            lr=hparams["learning_rate"], decay=hparams["learning_rate_decay"]
        )
        model.compile(optimizer, losses.categorical_crossentropy, [metrics.categorical_accuracy])
    model.fit(
        x=train_x,
        y=train_y,
        batch_size=hparams["global_batch_size"],
        validation_data=validation_data,
        epochs=epochs,
        verbose=0,
        callbacks=[
            det.keras.DeterminedCallback(
                core_context, checkpoint=checkpoint, continue_id=continue_id, checkpoint_epochs=1
            ),
            det.keras.TensorBoard(core_context, update_freq="epoch", profile_batch=0),
            callbacks.LambdaCallback(
                on_epoch_end=lambda epoch, _: hold_for_pause(core_context, checkpoint, epoch)
            ),
        ],
    )


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format=det.LOG_FORMAT)
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=500)
    args = parser.parse_args()
    info = det.get_cluster_info()
    assert info is not None and info.task_type == "TRIAL"
    distributed, strategy = det.core.DistributedContext.from_tf_config()
    with det.core.init(distributed=distributed) as core_context:
        main(
            core_context,
            strategy,
            info.latest_checkpoint,
            info.trial.trial_id,
            info.trial.hparams,
            args.epochs,
        )
