"""A TensorFlowTrial (PEDL 0.x form): a small MLP on generated blobs, in a tf.compat.v1 graph.

``PEDL_TEST_KILL_AT_BATCH=n`` SIGKILLs the process while it trains its n-th batch, once: only
while the file ``PEDL_TEST_MARKER`` names does not exist (it is created first).
"""

import os
import signal

import numpy as np
import tensorflow as tf

from pedl.frameworks.tensorflow import TensorFlowTrial


def blobs(n, seed):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 4)).astype("float32")
    return x, (x[:, 0] + x[:, 1] > 0).astype("int64")


def make_data_loaders(experiment_config, hparams):
    batch_size = hparams["global_batch_size"]
    train = tf.data.Dataset.from_tensor_slices(blobs(100, 0)).shuffle(100).batch(batch_size)
    validation = tf.data.Dataset.from_tensor_slices(blobs(40, 1)).batch(batch_size)
    return train, validation


class _Killer:
    def __init__(self):
        self.batches = 0
        self.kill_at = int(os.environ.get("PEDL_TEST_KILL_AT_BATCH", "0"))

    def __call__(self, is_training):
        if is_training:
            self.batches += 1
            marker = os.environ.get("PEDL_TEST_MARKER", "")
            if self.batches == self.kill_at and marker and not os.path.exists(marker):
                open(marker, "w").close()
                os.kill(os.getpid(), signal.SIGKILL)
        return np.int64(0)


def dense(x, units, name):
    glorot = tf.compat.v1.glorot_uniform_initializer()
    w = tf.compat.v1.get_variable(f"{name}/kernel", [x.shape[-1], units], initializer=glorot)
    b = tf.compat.v1.get_variable(f"{name}/bias", [units], initializer=tf.zeros_initializer())
    return tf.matmul(x, w) + b


class BlobsTrial(TensorFlowTrial):
    def optimizer(self):
        return tf.compat.v1.train.MomentumOptimizer(self.hparams["learning_rate"], 0.9)

    def build_graph(self, record, is_training):
        x, y = record
        tick = tf.numpy_function(_Killer(), [is_training], tf.int64)
        with tf.control_dependencies([tick]):
            x = tf.identity(x)
        hidden = tf.nn.relu(dense(x, self.hparams["hidden"], "hidden"))
        logits = dense(hidden, 2, "out")
        loss = tf.reduce_mean(
            tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits)
        )
        accuracy = tf.reduce_mean(tf.cast(tf.equal(tf.argmax(logits, 1), y), tf.float32))
        return {"loss": loss, "accuracy": accuracy, "error": 1.0 - accuracy}

    def training_metrics(self):
        return ["accuracy"]

    def validation_metrics(self):
        return ["accuracy", "error"]
