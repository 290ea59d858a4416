"""The same models trained by plain Keras ``fit``: what PEDL's metrics must equal.

Each reference builds the model definition's network with the same layers in the same
seeded state (``keras.utils.set_random_seed(trial_seed)``, as PEDL seeds a trial), feeds
the same batches in the same order, and trains epoch by epoch with validation after each
epoch; PEDL runs the same model definition in chunks of one epoch with a validation after
each. ``fit``'s history then holds, per epoch, what PEDL recorded per chunk.
"""

from __future__ import annotations

import importlib.util
import sys
import types
from pathlib import Path
from typing import Any

import keras
import numpy as np
import tensorflow as tf

MODELS = Path(__file__).parent / "models"


def model_module(name: str) -> types.ModuleType:
    """Import a model definition's ``__init__.py`` under a private name (for its data)."""
    spec = importlib.util.spec_from_file_location(
        f"compat_reference_{name}", MODELS / name / "__init__.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def script_module(name: str) -> types.ModuleType:
    """Import a script model definition's ``train.py`` under a private name (its ``__main__``
    part does not run)."""
    spec = importlib.util.spec_from_file_location(
        f"compat_reference_{name}", MODELS / name / "train.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def dense(inputs: int, hidden: int, classes: int) -> keras.Model:
    return keras.Sequential(
        [
            keras.Input((inputs,)),
            keras.layers.Dense(hidden, activation="relu"),
            keras.layers.Dense(classes, activation="softmax"),
        ]
    )


def permuted_epochs(sequence: Any, seed: int, epochs: int) -> list[tuple[Any, Any]]:
    """A Sequence's batches per epoch in PEDL's documented order (a permutation per epoch
    drawn from ``numpy.random.default_rng([trial_seed, epoch])``), joined into arrays."""
    out = []
    for epoch in range(epochs):
        order = np.random.default_rng([seed, epoch]).permutation(len(sequence))
        batches = [sequence[int(i)] for i in order]
        out.append(tuple(np.concatenate(parts) for parts in zip(*batches, strict=True)))
    return out


def run(name: str, seed: int, hparams: dict[str, Any], epochs: int) -> dict[str, list[float]]:
    """Train model ``name`` with plain Keras; return its history."""
    module = model_module(name)
    keras.backend.clear_session(free_memory=False)
    keras.utils.set_random_seed(seed)
    batch = hparams["global_batch_size"]
    compile_args: dict[str, Any] = {
        "loss": "sparse_categorical_crossentropy",
        "metrics": ["accuracy"],
    }
    fit_args: dict[str, Any] = {}
    if name == "det02x_digits":
        (x, y), (vx, vy) = module.load_data()
        model = dense(64, hparams["hidden"], 10)
        optimizer: Any = keras.optimizers.SGD(hparams["lr"], momentum=0.9)
        train: Any = (
            tf.data.Dataset.from_tensor_slices((x, y))
            .shuffle(1200, seed=3)
            .batch(batch)
            .map(module.scale)
        )
        validation: Any = (vx / 16.0, vy)
        fit_args["validation_batch_size"] = batch
    else:
        (x, y), (vx, vy) = module.load_data()
        model = dense(4, 16, 3)
        optimizer = keras.optimizers.Adam(hparams.get("lr", hparams.get("learning_rate")))
        validation = (vx, vy)
        fit_args["validation_batch_size"] = batch
        if name == "det2020_iris":
            sequence = module.keras.InMemorySequence(x, y, batch_size=batch)
            train = permuted_epochs(sequence, seed, epochs)
            fit_args.update(batch_size=batch, shuffle=False)
        elif name == "det_adapters_iris":
            validation = module.keras.ArrayLikeAdapter(vx, vy, batch_size=batch)
            del fit_args["validation_batch_size"]
            train = tf.data.Dataset.from_tensor_slices((x, y)).cache().batch(batch)
        elif name == "det038_iris":
            train = (x, y)
            fit_args.update(batch_size=batch, shuffle=False)
            compile_args["metrics"] = ["accuracy", module.NumpyAccuracy()]
            compile_args["run_eagerly"] = True
        else:  # pedl0x_iris
            train = tf.data.Dataset.from_tensor_slices((x, y)).shuffle(120, seed=4).batch(batch)
    model.compile(optimizer=optimizer, **compile_args)
    if isinstance(train, list):  # one (x, y) per epoch
        merged: dict[str, list[float]] = {}
        for epoch, (x_epoch, y_epoch) in enumerate(train):
            h = model.fit(
                x_epoch,
                y_epoch,
                initial_epoch=epoch,
                epochs=epoch + 1,
                validation_data=validation,
                verbose=0,
                **fit_args,
            )
            for k, values in h.history.items():
                merged.setdefault(k, []).extend(float(v) for v in values)
        return merged
    if isinstance(train, tuple):
        history = model.fit(
            *train, epochs=epochs, validation_data=validation, verbose=0, **fit_args
        )
    else:
        history = model.fit(train, epochs=epochs, validation_data=validation, verbose=0, **fit_args)
    return {k: [float(v) for v in values] for k, values in history.history.items()}
