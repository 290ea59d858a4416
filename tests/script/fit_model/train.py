"""A simple model definition: a plain Keras script whose only PEDL line reads hyperparameters.

``PEDL_TEST_KILL_AT_BATCH=n`` SIGKILLs the process after the n-th batch it trains (a Keras
callback, as a user's own would be), once: only while the file ``PEDL_TEST_MARKER`` names
does not exist (it is created first).
"""

import argparse
import os
import signal

import keras
import numpy as np

import pedl

parser = argparse.ArgumentParser()
parser.add_argument("--hidden", type=int, default=8)
args = parser.parse_args()


class Killer(keras.callbacks.Callback):
    def __init__(self) -> None:
        super().__init__()
        self.batches = 0
        self.kill_at = int(os.environ.get("PEDL_TEST_KILL_AT_BATCH", "0"))

    def on_train_batch_end(self, batch, logs=None):
        self.batches += 1
        marker = os.environ.get("PEDL_TEST_MARKER", "")
        if self.batches == self.kill_at and marker and not os.path.exists(marker):
            open(marker, "w").close()
            os.kill(os.getpid(), signal.SIGKILL)


rng = np.random.default_rng(0)
x = rng.normal(size=(120, 4)).astype("float32")
y = (x[:, 0] + x[:, 1] > 0).astype("int32")

model = keras.Sequential(
    [
        keras.Input((4,)),
        keras.layers.Dense(args.hidden, activation="relu"),
        keras.layers.Dropout(0.2),
        keras.layers.Dense(2, activation="softmax"),
    ]
)
model.compile(
    optimizer=keras.optimizers.Adam(pedl.get_hyperparameter("learning_rate")),
    loss="sparse_categorical_crossentropy",
    metrics=["accuracy"],
)
history = model.fit(
    x,
    y,
    batch_size=pedl.get_hyperparameter("global_batch_size"),
    epochs=100,
    validation_split=0.25,
    callbacks=[Killer()],
    verbose=0,
)
print("fit returned", sorted(history.history))
