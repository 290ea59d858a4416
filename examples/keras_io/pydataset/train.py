"""Training on a ``keras.utils.PyDataset``, as Keras's documentation of the class writes one
(a dataset that serves batches by index, with ``__len__`` and ``__getitem__``), for training
and for validation.

Changed only to run offline and in seconds: random feature vectors stand in for CIFAR-10's
image files. Nothing in it is PEDL's.
"""

import math

import keras
import numpy as np


class CIFAR10PyDataset(keras.utils.PyDataset):
    def __init__(self, x_set, y_set, batch_size, **kwargs):
        super().__init__(**kwargs)
        self.x, self.y = x_set, y_set
        self.batch_size = batch_size

    def __len__(self):
        # Return number of batches.
        return math.ceil(len(self.x) / self.batch_size)

    def __getitem__(self, idx):
        # Return x, y for batch idx.
        low = idx * self.batch_size
        # Cap upper bound at array length; the last batch may be smaller
        # if the total number of items is not a multiple of batch size.
        high = min(low + self.batch_size, len(self.x))
        batch_x = self.x[low:high]
        batch_y = self.y[low:high]
        return batch_x, batch_y


rng = np.random.default_rng(11)
centers = rng.normal(size=(4, 12))
labels = rng.integers(0, 4, size=600)
features = (centers[labels] + rng.normal(scale=1.0, size=(600, 12))).astype("float32")

train = CIFAR10PyDataset(features[:480], labels[:480], batch_size=32)
validation = CIFAR10PyDataset(features[480:], labels[480:], batch_size=32)

model = keras.Sequential(
    [
        keras.Input(shape=(12,)),
        keras.layers.Dense(32, activation="relu"),
        keras.layers.Dense(4, activation="softmax"),
    ]
)
model.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
history = model.fit(train, validation_data=validation, epochs=4)

loss, accuracy = model.evaluate(validation)
print("Validation accuracy after training:", accuracy)
