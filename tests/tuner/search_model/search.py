"""KerasTuner's getting-started search on scikit-learn's digits, with a flag choosing the
tuner: a plain KerasTuner script (nothing of PEDL in it)."""

import argparse

import keras
import keras_tuner
import numpy as np
from sklearn.datasets import load_digits

parser = argparse.ArgumentParser()
parser.add_argument("--tuner", default="random")
parser.add_argument("--epochs", type=int, default=2)
args = parser.parse_args()

digits = load_digits()
x = (digits.images / 16.0).astype("float32")
y = digits.target.astype("int64")
order = np.random.default_rng(0).permutation(len(x))
x, y = x[order][:640], y[order][:640]
x_train, y_train, x_val, y_val = x[:512], y[:512], x[512:], y[512:]


def build_model(hp):
    model = keras.Sequential([keras.Input(shape=(8, 8)), keras.layers.Flatten()])
    model.add(keras.layers.Dense(hp.Choice("units", [16, 32]), activation="relu"))
    dropout = hp.Boolean("dropout")
    with hp.conditional_scope("dropout", [True]):
        rate = hp.Choice("rate", [0.25])  # registered (None) also where dropout is off
    if dropout:
        model.add(keras.layers.Dropout(rate))
    model.add(keras.layers.Dense(10, activation="softmax"))
    if args.tuner == "grid":
        learning_rate = hp.Fixed("lr", 0.01)
    else:
        learning_rate = hp.Float("lr", min_value=1e-3, max_value=3e-2, sampling="log")
    model.compile(
        optimizer=keras.optimizers.Adam(learning_rate=learning_rate),
        loss="sparse_categorical_crossentropy",
        metrics=["accuracy"],
    )
    return model


common = dict(hypermodel=build_model, overwrite=True, directory="kt", project_name="digits")
if args.tuner == "random":
    tuner = keras_tuner.RandomSearch(objective="val_accuracy", max_trials=3, **common)
elif args.tuner == "grid":
    tuner = keras_tuner.GridSearch(objective="val_accuracy", **common)
elif args.tuner == "hyperband":
    tuner = keras_tuner.Hyperband(
        objective=keras_tuner.Objective("val_loss", direction="min"),
        max_epochs=2,
        factor=2,
        **common,
    )
else:
    tuner = keras_tuner.BayesianOptimization(objective="val_accuracy", max_trials=3, **common)

tuner.search(x_train, y_train, epochs=args.epochs, validation_data=(x_val, y_val), batch_size=64)

best = tuner.get_best_models(num_models=1)[0]
tuner.results_summary()
print("BEST_HPS", tuner.get_best_hyperparameters(1)[0].values)
print("BEST_EVAL", best.evaluate(x_val, y_val, verbose=0))
np.save("best_weights.npy", np.concatenate([w.reshape(-1) for w in best.get_weights()]))
