"""A simple model definition: a plain Keras script on scikit-learn's digits.

PEDL runs it as a trial (``entrypoint: python3 train.py --dense-units 64``) and intercepts its
``model.fit``: training runs for the searcher's length in chunks, with validations,
checkpoints, pause and exact resume. The only PEDL line is ``pedl.get_hyperparameter``.
"""

import argparse

import keras
import numpy as np
from sklearn.datasets import load_digits

import pedl

parser = argparse.ArgumentParser()
parser.add_argument("--dense-units", type=int, default=64)
args = parser.parse_args()

digits = load_digits()
x = (digits.images / 16.0).astype("float32")[..., np.newaxis]
y = digits.target.astype("int32")
order = np.random.default_rng(0).permutation(len(x))
n_val = len(x) // 5
val, train = order[:n_val], order[n_val:]

model = keras.Sequential(
    [
        keras.Input(shape=(8, 8, 1)),
        keras.layers.Conv2D(pedl.get_hyperparameter("conv_filters"), 3, activation="relu"),
        keras.layers.Flatten(),
        keras.layers.Dense(args.dense_units, activation="relu"),
        keras.layers.Dropout(pedl.get_hyperparameter("dropout")),
        keras.layers.Dense(10, activation="softmax"),
    ]
)
model.compile(
    optimizer=keras.optimizers.Adam(pedl.get_hyperparameter("learning_rate")),
    loss="sparse_categorical_crossentropy",
    metrics=["accuracy"],
)
model.fit(
    x[train],
    y[train],
    batch_size=pedl.get_hyperparameter("global_batch_size"),
    epochs=10,  # PEDL trains for the searcher's max_length instead
    validation_data=(x[val], y[val]),
)
