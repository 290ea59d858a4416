"""Determined 0.38's iris TF-Keras example pattern, through the ``determined`` alias:
``det.core.DistributedContext.from_tf_config()``, ``det.core.init(distributed=...)``, the
model built under the strategy's scope, ``det.keras.DeterminedCallback``."""

import determined as det
import determined.keras
import keras
import numpy as np


def data(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 4)).astype("float32")
    return x, keras.utils.to_categorical((x[:, 0] - x[:, 2] > 0).astype("int32"), 2)


if __name__ == "__main__":
    info = det.get_cluster_info()
    assert info is not None
    distributed, strategy = det.core.DistributedContext.from_tf_config()
    with det.core.init(distributed=distributed) as core_context:
        with strategy.scope():
            model = keras.Sequential(
                [
                    keras.Input((4,)),
                    keras.layers.Dense(8),
                    keras.layers.Dense(2, activation="softmax"),
                ]
            )
            model.compile(
                keras.optimizers.RMSprop(0.01),
                keras.losses.categorical_crossentropy,
                metrics=[keras.metrics.categorical_accuracy],
            )
        model.fit(
            *data(96, 0),
            batch_size=info.trial.hparams["global_batch_size"],
            validation_data=data(32, 1),
            epochs=3,
            callbacks=[
                det.keras.DeterminedCallback(
                    core_context,
                    checkpoint=info.latest_checkpoint,
                    continue_id=info.trial.trial_id,
                )
            ],
        )
