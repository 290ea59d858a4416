"""Simple MNIST convnet, as keras.io's example (vision/mnist_convnet) writes it.

Changed only to run offline and in seconds: scikit-learn's bundled 8x8 digits stand in for
MNIST, and the convnet is smaller. Nothing in it is PEDL's.
"""

import keras
import numpy as np
from keras import layers
from sklearn.datasets import load_digits

# Model / data parameters
num_classes = 10
input_shape = (8, 8, 1)

# Load the data and split it between train and test sets
digits = load_digits()
x = (digits.images / 16.0).astype("float32")
x = np.expand_dims(x, -1)
y = digits.target
x_train, x_test, y_train, y_test = x[:1500], x[1500:], y[:1500], y[1500:]
print("x_train shape:", x_train.shape)
print(x_train.shape[0], "train samples")
print(x_test.shape[0], "test samples")

# convert class vectors to binary class matrices
y_train = keras.utils.to_categorical(y_train, num_classes)
y_test = keras.utils.to_categorical(y_test, num_classes)

model = keras.Sequential(
    [
        keras.Input(shape=input_shape),
        layers.Conv2D(16, kernel_size=(3, 3), activation="relu"),
        layers.MaxPooling2D(pool_size=(2, 2)),
        layers.Flatten(),
        layers.Dropout(0.5),
        layers.Dense(num_classes, activation="softmax"),
    ]
)
model.summary()

batch_size = 64
epochs = 4

model.compile(loss="categorical_crossentropy", optimizer="adam", metrics=["accuracy"])
model.fit(x_train, y_train, batch_size=batch_size, epochs=epochs, validation_split=0.1)

score = model.evaluate(x_test, y_test, verbose=0)
print("Test loss:", score[0])
print("Test accuracy:", score[1])
