"""Timeseries classification from scratch, as keras.io's example
(timeseries/timeseries_classification_from_scratch) writes it: a fully convolutional network,
trained with ModelCheckpoint, ReduceLROnPlateau and EarlyStopping; after fit, the best model
saved is loaded again and evaluated on the test set.

Changed only to run offline and in seconds: synthetic series (a noisy sine wave, with or
without a bump) stand in for the FordA dataset, and the network and its epochs are smaller
(batches of 16, so that its 12 epochs learn the bump from any seed: at 32 with a smaller bump,
3 seeds of 10 stopped early near chance).
Nothing in it is PEDL's.
"""

import keras
import numpy as np


def readucr(rng, n, length=64):
    """Noisy sine waves; label 1 where a bump rides on the wave."""
    t = np.linspace(0, 4 * np.pi, length)
    y = rng.integers(0, 2, size=n)
    phase = rng.uniform(0, 2 * np.pi, size=(n, 1))
    x = np.sin(t + phase) + rng.normal(scale=0.3, size=(n, length))
    start = rng.integers(8, length - 16, size=n)
    for i in np.flatnonzero(y):
        x[i, start[i] : start[i] + 8] += 2.5
    return x.astype("float32"), y


rng = np.random.default_rng(42)
x_train, y_train = readucr(rng, 960)
x_test, y_test = readucr(rng, 100)

x_train = x_train.reshape((x_train.shape[0], x_train.shape[1], 1))
x_test = x_test.reshape((x_test.shape[0], x_test.shape[1], 1))

num_classes = len(np.unique(y_train))

idx = np.random.permutation(len(x_train))
x_train = x_train[idx]
y_train = y_train[idx]


def make_model(input_shape):
    input_layer = keras.layers.Input(input_shape)

    conv1 = keras.layers.Conv1D(filters=16, kernel_size=3, padding="same")(input_layer)
    conv1 = keras.layers.BatchNormalization()(conv1)
    conv1 = keras.layers.ReLU()(conv1)

    conv2 = keras.layers.Conv1D(filters=16, kernel_size=3, padding="same")(conv1)
    conv2 = keras.layers.BatchNormalization()(conv2)
    conv2 = keras.layers.ReLU()(conv2)

    gap = keras.layers.GlobalAveragePooling1D()(conv2)

    output_layer = keras.layers.Dense(num_classes, activation="softmax")(gap)

    return keras.models.Model(inputs=input_layer, outputs=output_layer)


model = make_model(input_shape=x_train.shape[1:])

epochs = 12
batch_size = 16

callbacks = [
    keras.callbacks.ModelCheckpoint("best_model.keras", save_best_only=True, monitor="val_loss"),
    keras.callbacks.ReduceLROnPlateau(monitor="val_loss", factor=0.5, patience=2, min_lr=0.0001),
    keras.callbacks.EarlyStopping(monitor="val_loss", patience=4, verbose=1),
]
model.compile(
    optimizer="adam",
    loss="sparse_categorical_crossentropy",
    metrics=["sparse_categorical_accuracy"],
)
history = model.fit(
    x_train,
    y_train,
    batch_size=batch_size,
    epochs=epochs,
    callbacks=callbacks,
    validation_split=0.2,
    verbose=1,
)

model = keras.models.load_model("best_model.keras")

test_loss, test_acc = model.evaluate(x_test, y_test)

print("Test accuracy", test_acc)
print("Test loss", test_loss)
