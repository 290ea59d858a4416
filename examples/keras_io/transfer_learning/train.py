"""Transfer learning and fine-tuning, as keras.io's guide (guides/transfer_learning) writes
its end-to-end example: a base model frozen under a new head, the head trained, then the base
unfrozen, the model compiled again with a low learning rate and trained again (a second
``fit``). The base runs in inference mode (``training=False``), so its BatchNormalization
layers keep their statistics while it is fine-tuned.

Changed only to run offline and in seconds: synthetic 16x16 images (a bright square or not)
in a ``tf.data`` pipeline stand in for cats and dogs, a small convolutional base whose
filters are set to find bright regions stands in for Xception's ImageNet weights, and the
head trains at a larger learning rate (three epochs instead of twenty). Nothing in it is
PEDL's.
"""

import keras
import numpy as np
import tensorflow as tf
from keras import layers

rng = np.random.default_rng(3)


def images(n):
    x = rng.normal(scale=0.2, size=(n, 16, 16, 3)).astype("float32")
    y = rng.integers(0, 2, size=n)
    for i in np.flatnonzero(y):
        r, c = rng.integers(0, 8, size=2)
        x[i, r : r + 8, c : c + 8] += 2.0
    return x, y.astype("float32")


x_train, y_train = images(480)
x_val, y_val = images(96)
train_ds = tf.data.Dataset.from_tensor_slices((x_train, y_train)).batch(32)
validation_ds = tf.data.Dataset.from_tensor_slices((x_val, y_val)).batch(32)

# The "pre-trained" base (keras.applications.Xception(weights="imagenet", ...) in the
# guide): filters that average their window, so its features are local brightness.
brightness = keras.initializers.Constant(1 / 27)
base_model = keras.Sequential(
    [
        keras.Input(shape=(16, 16, 3)),
        layers.Conv2D(8, 3, activation="relu", kernel_initializer=brightness),
        layers.BatchNormalization(),
        layers.Conv2D(8, 3, activation="relu", kernel_initializer=brightness),
    ],
    name="base",
)

# Freeze the base_model
base_model.trainable = False

# Create new model on top
inputs = keras.Input(shape=(16, 16, 3))
x = layers.RandomFlip("horizontal")(inputs)
# The base model contains batchnorm layers. We want to keep them in inference mode
# when we unfreeze the base model for fine-tuning, so we make sure that the
# base_model is running in inference mode here.
x = base_model(x, training=False)
x = keras.layers.GlobalAveragePooling2D()(x)
x = keras.layers.Dropout(0.2)(x)  # Regularize with dropout
outputs = keras.layers.Dense(1)(x)
model = keras.Model(inputs, outputs)

model.summary(show_trainable=True)

model.compile(
    optimizer=keras.optimizers.Adam(0.01),
    loss=keras.losses.BinaryCrossentropy(from_logits=True),
    metrics=[keras.metrics.BinaryAccuracy()],
)

epochs = 3
print("Fitting the top layer of the model")
model.fit(train_ds, epochs=epochs, validation_data=validation_ds)

# Unfreeze the base_model. Note that it keeps running in inference mode
# since we passed `training=False` when calling it. This means that
# the batchnorm layers will not update their batch statistics.
# This prevents the batchnorm layers from undoing all the training
# we've done so far.
base_model.trainable = True
model.summary(show_trainable=True)

model.compile(
    optimizer=keras.optimizers.Adam(1e-5),  # Low learning rate
    loss=keras.losses.BinaryCrossentropy(from_logits=True),
    metrics=[keras.metrics.BinaryAccuracy()],
)

epochs = 2
print("Fitting the end-to-end model")
model.fit(train_ds, epochs=epochs, validation_data=validation_ds)

print("Test dataset evaluation")
results = model.evaluate(validation_ds, return_dict=True)
print("Test binary_accuracy:", results["binary_accuracy"])
