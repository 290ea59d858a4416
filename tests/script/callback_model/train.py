"""Determined 0.38's script form: get_cluster_info, from_tf_config, core.init(),
DeterminedCallback and TensorBoard (its iris example's shape, with PEDL's names)."""

import argparse

import keras
import numpy as np

import pedl
from pedl.script import DeterminedCallback, TensorBoard, from_tf_config, get_cluster_info


def data(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 4)).astype("float32")
    return x, keras.utils.to_categorical((x[:, 0] - x[:, 2] > 0).astype("int32"), 2)


def main(core_context, strategy, checkpoint, continue_id, hparams, epochs):
    train_x, train_y = data(96, 0)
    with strategy.scope():
        model = keras.Sequential(
            [
                keras.Input((4,)),
                keras.layers.Dense(hparams["layer1_dense_size"]),
                keras.layers.Dense(2, activation="softmax"),
            ]
        )
        model.compile(
            keras.optimizers.RMSprop(hparams["learning_rate"]),
            keras.losses.categorical_crossentropy,
            metrics=[keras.metrics.categorical_accuracy],
        )
    det_cb = DeterminedCallback(
        core_context, checkpoint=checkpoint, continue_id=continue_id, checkpoint_epochs=1
    )
    model.fit(
        x=train_x,
        y=train_y,
        batch_size=hparams["global_batch_size"],
        validation_data=data(32, 1),
        epochs=epochs,
        callbacks=[det_cb, TensorBoard(core_context, update_freq="batch", profile_batch=0)],
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=500)
    args = parser.parse_args()
    info = get_cluster_info()
    assert info is not None and info.task_type == "TRIAL"
    distributed, strategy = from_tf_config()
    with pedl.core.init(distributed=distributed) as core_context:
        main(
            core_context,
            strategy,
            info.latest_checkpoint,
            info.trial.trial_id,
            info.trial.hparams,
            args.epochs,
        )
