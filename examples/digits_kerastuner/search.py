"""KerasTuner's getting-started search (keras.io/keras_tuner/getting_started) on
scikit-learn's digits: a plain KerasTuner script, nothing of PEDL in it."""

import keras
import keras_tuner
import numpy as np
from sklearn.datasets import load_digits

digits = load_digits()
x = (digits.images / 16.0).astype("float32")
y = digits.target.astype("int64")
order = np.random.default_rng(0).permutation(len(x))
x, y = x[order], y[order]
x_train, y_train, x_val, y_val = x[:1438], y[:1438], x[1438:], y[1438:]


def build_model(hp):
    model = keras.Sequential()
    model.add(keras.Input(shape=(8, 8)))
    model.add(keras.layers.Flatten())
    model.add(
        keras.layers.Dense(
            units=hp.Int("units", min_value=32, max_value=128, step=32),
            activation=hp.Choice("activation", ["relu", "tanh"]),
        )
    )
    dropout = hp.Boolean("dropout")
    with hp.conditional_scope("dropout", [True]):
        rate = hp.Float("rate", min_value=0.1, max_value=0.3, step=0.1)
    if dropout:
        model.add(keras.layers.Dropout(rate=rate))
    model.add(keras.layers.Dense(10, activation="softmax"))
    learning_rate = hp.Float("lr", min_value=1e-4, max_value=1e-2, sampling="log")
    model.compile(
        optimizer=keras.optimizers.Adam(learning_rate=learning_rate),
        loss="sparse_categorical_crossentropy",
        metrics=["accuracy"],
    )
    return model


tuner = keras_tuner.RandomSearch(
    hypermodel=build_model,
    objective="val_accuracy",
    max_trials=4,
    executions_per_trial=1,
    overwrite=True,
    directory="my_dir",
    project_name="digits",
)
tuner.search_space_summary()

tuner.search(x_train, y_train, epochs=3, validation_data=(x_val, y_val))

models = tuner.get_best_models(num_models=2)
best_model = models[0]
best_model.summary()
tuner.results_summary()
print("best model's validation:", best_model.evaluate(x_val, y_val, verbose=0))

best_hps = tuner.get_best_hyperparameters(1)
model = build_model(best_hps[0])
model.fit(np.concatenate((x_train, x_val)), np.concatenate((y_train, y_val)), epochs=1)
