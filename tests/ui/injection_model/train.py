"""The model of tests/ui/test_injection.py: a plain Keras script (a tiny model on random
blobs) that puts the test's markup where a trial's own output reaches the UI. It prints the
hyperparameter ``pedl_test_log`` as a log line, reports a training metric named
``pedl_test_metric`` and a validation metric ``val_`` + that name (at batch 1, next to the
searcher's ``val_loss``), and, where ``pedl_test_fail`` is set, raises a RuntimeError with
that message before training."""

import keras
import numpy as np

import pedl
from pedl import core
from pedl.script import get_cluster_info

info = get_cluster_info()
assert info is not None and info.trial is not None, "runs as a PEDL trial"
hparams = info.trial.hparams
print(hparams["pedl_test_log"], flush=True)
if hparams.get("pedl_test_fail"):
    raise RuntimeError(hparams["pedl_test_fail"])
metric = hparams["pedl_test_metric"]
with core.init() as core_context:
    core_context.train.report_training_metrics(1, {metric: 1.0})
    core_context.train.report_validation_metrics(1, {"val_loss": 5.0, f"val_{metric}": 0.5})

rng = np.random.default_rng(0)
x = rng.normal(size=(64, 4)).astype("float32")
y = (x[:, 0] > 0).astype("int32")
model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2, activation="softmax")])
model.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
model.fit(x, y, batch_size=pedl.get_hyperparameter("global_batch_size"), validation_data=(x, y))
