"""Text classification from scratch, as keras.io's example (nlp/text_classification_from_scratch)
writes it: raw strings in a ``tf.data`` pipeline, a ``TextVectorization`` layer adapted on the
training text and mapped over the datasets, a 1D convnet over word embeddings; after fit, an
end-to-end model that takes raw strings is built around the trained one and evaluated.

Changed only to run offline and in seconds: short synthetic reviews stand in for IMDB's, and
the network is smaller. Nothing in it is PEDL's.
"""

import keras
import numpy as np
import tensorflow as tf
from keras import layers

rng = np.random.default_rng(7)
GOOD = ["great", "wonderful", "superb", "moving", "brilliant", "fun"]
BAD = ["awful", "boring", "dull", "terrible", "weak", "tedious"]
FILLER = ["the", "movie", "plot", "actors", "was", "a", "film", "and", "story", "really"]


def reviews(n):
    texts, labels = [], []
    for _ in range(n):
        label = int(rng.integers(0, 2))
        words = list(rng.choice(FILLER, size=8)) + list(rng.choice(GOOD if label else BAD, 2))
        rng.shuffle(words)
        texts.append(" ".join(words))
        labels.append(label)
    return np.array(texts), np.array(labels, dtype="float32")


batch_size = 32
raw_train_ds = tf.data.Dataset.from_tensor_slices(reviews(960)).batch(batch_size)
raw_val_ds = tf.data.Dataset.from_tensor_slices(reviews(96)).batch(batch_size)
raw_test_ds = tf.data.Dataset.from_tensor_slices(reviews(96)).batch(batch_size)

# Model constants.
max_features = 100
embedding_dim = 16
sequence_length = 12

vectorize_layer = keras.layers.TextVectorization(
    max_tokens=max_features,
    output_mode="int",
    output_sequence_length=sequence_length,
)

# Let's make a text-only dataset (no labels):
text_ds = raw_train_ds.map(lambda x, y: x)
# Let's call `adapt`:
vectorize_layer.adapt(text_ds)


def vectorize_text(text, label):
    text = tf.expand_dims(text, -1)
    return vectorize_layer(text), label


# Vectorize the data.
train_ds = raw_train_ds.map(vectorize_text)
val_ds = raw_val_ds.map(vectorize_text)
test_ds = raw_test_ds.map(vectorize_text)

# Do async prefetching / buffering of the data for best performance on GPU.
train_ds = train_ds.cache().prefetch(buffer_size=10)
val_ds = val_ds.cache().prefetch(buffer_size=10)
test_ds = test_ds.cache().prefetch(buffer_size=10)

# A integer input for vocab indices.
inputs = keras.Input(shape=(None,), dtype="int64")

x = layers.Embedding(max_features, embedding_dim)(inputs)
x = layers.Dropout(0.5)(x)

# Conv1D + global max pooling
x = layers.Conv1D(16, 3, padding="valid", activation="relu", strides=1)(x)
x = layers.GlobalMaxPooling1D()(x)

# We add a vanilla hidden layer:
x = layers.Dense(16, activation="relu")(x)
x = layers.Dropout(0.5)(x)

# We project onto a single unit output layer, and squash it with a sigmoid:
predictions = layers.Dense(1, activation="sigmoid", name="predictions")(x)

model = keras.Model(inputs, predictions)

# Compile the model with binary crossentropy loss and an adam optimizer.
model.compile(loss="binary_crossentropy", optimizer="adam", metrics=["accuracy"])

epochs = 4

# Fit the model using the train and test datasets.
model.fit(train_ds, validation_data=val_ds, epochs=epochs)

model.evaluate(test_ds)

# A string input
inputs = keras.Input(shape=(1,), dtype="string")
# Turn strings into vocab indices
indices = vectorize_layer(inputs)
# Turn vocab indices into predictions
outputs = model(indices)

# Our end to end model
end_to_end_model = keras.Model(inputs, outputs)
end_to_end_model.compile(loss="binary_crossentropy", optimizer="adam", metrics=["accuracy"])

# Test it with `raw_test_ds`, which yields raw strings
raw_test = raw_test_ds.map(lambda x, y: (tf.expand_dims(x, -1), y))
loss, accuracy = end_to_end_model.evaluate(raw_test)
print("End-to-end test accuracy:", accuracy)
