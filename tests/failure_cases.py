"""Model definitions that fail in every place a model definition can, and what PEDL must say.

Shared by the master's and local mode's failure tests: the same definitions must end the
same way (outcome, attempts, error type, message and the user's file:line) in both.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass
from pathlib import Path

MAX_RESTARTS = 2

BASE = """
import time

import keras
import numpy as np
import pedl
from pedl.keras import TFKerasTrial


def blobs(n, seed):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 4)).astype("float32")
    return x, (x[:, 0] > 0).astype("int32")


def chosen():
    return ONLY_UNITS is None or Fail.units == ONLY_UNITS


class Fail(keras.callbacks.Callback):
    units = None

    def on_train_batch_begin(self, batch, logs=None):
        at = FAIL_AT_BATCH
        if chosen() and at is not None and int(self.model.optimizer.iterations) >= at:
            done = int(self.model.optimizer.iterations)
            raise RAISED("boom at batch %d%s" % (done, STAMP))  # FAIL:batch


class Tiny(TFKerasTrial):
    def __init__(self, context):
        super().__init__(context)
        Fail.units = context.get_hparam("units")
        if chosen() and WHERE == "init":
            raise RAISED("boom in __init__")  # FAIL:init

    def build_model(self):
        if chosen() and WHERE == "build_model":
            raise RAISED("boom in build_model")  # FAIL:build_model
        model = self.context.wrap_model(keras.Sequential([
            keras.Input((4,)),
            keras.layers.Dense(4, activation="relu"),
            keras.layers.Dense(2, activation="softmax"),
        ]))
        model.compile(
            self.context.wrap_optimizer(keras.optimizers.SGD(0.05)),
            "sparse_categorical_crossentropy",
            metrics=["accuracy"],
        )
        return model

    def build_training_data_loader(self):
        if chosen() and WHERE == "data_loader":
            raise RAISED("boom in the data loader")  # FAIL:data_loader
        return blobs(64, 0)

    def build_validation_data_loader(self):
        return blobs(16, 1)

    def keras_callbacks(self):
        return [Fail()]
"""

CONFIG = """
name: failure-{name}
hyperparameters:
  global_batch_size: 4
  units: {{type: categorical, vals: [{units}]}}
searcher:
  name: {searcher}
  metric: val_accuracy
  smaller_is_better: false
  max_length: {{batches: 24}}
  {extra}
scheduling_unit: 8
min_validation_period: {{batches: 8}}
min_checkpoint_period: {{batches: 8}}
max_restarts: {max_restarts}
reproducibility: {{experiment_seed: 1}}
"""


@dataclass(frozen=True)
class Case:
    name: str
    source: str
    error_type: str
    message: str
    """A fragment of the error's message."""
    marker: str | None
    """The ``# FAIL:...`` / ``# LINE`` comment on the line the location must name."""
    before_progress: bool
    recurs: bool = True
    """After progress: whether each attempt raises the same error at the same batch (then the
    restart that repeats it ends the trial), or one that differs (restarted up to
    ``MAX_RESTARTS`` times)."""

    @property
    def attempts(self) -> int:
        if self.before_progress:
            return 1
        return 2 if self.recurs else 1 + MAX_RESTARTS

    def location(self) -> str | None:
        if self.marker is None:
            return None
        for number, line in enumerate(self.source.splitlines(), start=1):
            if line.rstrip().endswith(self.marker):
                return f"__init__.py:{number}"
        raise AssertionError(f"no line ends with {self.marker!r}")

    def write(self, directory: Path) -> Path:
        directory.mkdir(parents=True, exist_ok=True)
        (directory / "__init__.py").write_text(self.source)
        return directory


def _model(
    where: str,
    *,
    fail_at_batch: int | None = None,
    raised: str = "ValueError",
    only_units: int | None = None,
    stamped: bool = False,
) -> str:
    """``stamped``: the error's message ends with the time, so that no two attempts raise the
    same error."""
    stamp = '" (at %d ns)" % time.time_ns()' if stamped else '""'
    return (
        f"import pedl\nWHERE = {where!r}\nFAIL_AT_BATCH = {fail_at_batch!r}\nRAISED = {raised}\n"
        f"ONLY_UNITS = {only_units!r}\n" + textwrap.dedent(BASE).replace("STAMP)", f"{stamp})")
    )


CASES = [
    Case(
        "syntax",
        "import keras\n\ndef broken(:  # LINE\n    pass\n",
        "SyntaxError",
        "invalid syntax",
        "# LINE",
        True,
    ),
    Case(
        "missing_package",
        "import os\nimport pedl_no_such_package_here  # LINE\n",
        "ModuleNotFoundError",
        "No module named 'pedl_no_such_package_here'",
        "# LINE",
        True,
    ),
    Case("no_trial_class", "X = 1\n", "ModelDefError", "Trial", None, True),
    Case("init", _model("init"), "ValueError", "boom in __init__", "# FAIL:init", True),
    Case(
        "build_model",
        _model("build_model"),
        "ValueError",
        "boom in build_model",
        "# FAIL:build_model",
        True,
    ),
    Case(
        "data_loader",
        _model("data_loader"),
        "ValueError",
        "boom in the data loader",
        "# FAIL:data_loader",
        True,
    ),
    Case(
        "first_batch",
        _model("", fail_at_batch=0),
        "ValueError",
        "boom at batch 0",
        "# FAIL:batch",
        True,
    ),
    Case(
        "after_checkpoint",
        _model("", fail_at_batch=12),
        "ValueError",
        "boom at batch 12",
        "# FAIL:batch",
        False,
    ),
    Case(
        "after_checkpoint_differing",
        _model("", fail_at_batch=12, stamped=True),
        "ValueError",
        "boom at batch 12 (at ",
        "# FAIL:batch",
        False,
        recurs=False,
    ),
]

TF_STUB = """
raise ModuleNotFoundError("No module named {name!r}", name={name!r})
"""


def write_tensorflow_stubs(directory: Path) -> Path:
    """A directory that, put first on PYTHONPATH, makes TensorFlow and Keras look missing."""
    directory.mkdir(parents=True, exist_ok=True)
    for name in ("tensorflow", "keras"):
        (directory / f"{name}.py").write_text(TF_STUB.format(name=name))
    return directory


INVALID_UNITS = 3

INVALID_HP_PLACES = {
    place: _model(where, fail_at_batch=at, raised="pedl.InvalidHP", only_units=INVALID_UNITS)
    for place, where, at in (
        ("init", "init", None),
        ("build_model", "build_model", None),
        ("data_loader", "data_loader", None),
        ("training", "", 4),
    )
}
"""Model definitions raising ``pedl.InvalidHP`` from each place, only in the trial whose
``units`` hyperparameter is :data:`INVALID_UNITS` (the others train normally)."""
