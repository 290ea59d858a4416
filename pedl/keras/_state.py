"""Everything exact resume needs, written to and read from a checkpoint directory.

Variables go to one flat binary file plus a JSON index (a checkpoint's bytes are
essentially the raw variable bytes, so save and restore run near copy speed). The index
records each variable's path, dtype and shape, so a checkpoint that does not fit the model
fails with a message that says where.
"""

from __future__ import annotations

import json
import pickle
import random
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import tensorflow as tf
from tensorflow.python.ops.resource_variable_ops import ResourceVariable

from pedl.keras._keras import (
    keras,
    optimizer_variables,
    seed_generator_states,
    variable_path,
    variable_value,
)

VARIABLES_FILE = "variables.bin"
VARIABLES_INDEX = "variables.json"
RNG_FILE = "rng.pkl"
LOOKUP_TABLES_FILE = "lookup_tables.pkl"
WORKER_GENERATORS_FILE = "worker_generators.pkl"


class CheckpointMismatchError(ValueError):
    """The checkpoint's variables do not match the model being restored."""


def _is_lookup_table(weight: Any) -> bool:
    """A Keras 2 lookup layer's table (``TextVectorization``, ``StringLookup``: tf-keras's
    ``TrackableWeightHandler``) among a model's weights: tensors got and set as a whole,
    strings among them, not a variable."""
    return not hasattr(weight, "assign") and hasattr(weight, "get_tensors")


def model_variables(model: keras.Model) -> list[Any]:
    """All model state (weights, non-trainable state, seed-generator state) and optimizer
    state, but for lookup tables (see :func:`save_lookup_tables`)."""
    variables = [v for v in model.variables if not _is_lookup_table(v)]
    variables += seed_generator_states(model)
    if model.optimizer is not None:
        variables += optimizer_variables(model.optimizer)
    return variables


def _local(value: Any) -> Any:
    """This worker's copy of a ``tf.distribute`` variable (read without a collective), else
    the variable itself."""
    if isinstance(value, tf.distribute.DistributedValues):
        return value.values[0]
    return value


def _plain(value: Any) -> bool:
    """A plain resource variable: neither distributed nor wrapped (Keras 2's autocast)."""
    return isinstance(value, ResourceVariable) and not isinstance(
        value, tf.distribute.DistributedValues
    )


def _read(value: Any) -> np.ndarray:
    """A variable's value as an array. A plain variable is read with one op: ``numpy()``
    goes through several Python layers of dispatch first, three quarters of a small model's
    checkpoint time."""
    if _plain(value):
        return np.asarray(
            tf.raw_ops.ReadVariableOp(resource=value.handle, dtype=value.dtype).numpy()
        )
    return np.asarray(value.numpy())


def _assign(value: Any, array: np.ndarray) -> None:
    """Set a variable to ``array`` (of its shape): one op for a plain variable of the same
    dtype (see :func:`_read`), else ``assign`` (which converts or explains)."""
    if _plain(value) and array.dtype == value.dtype.as_numpy_dtype:
        tf.raw_ops.AssignVariableOp(resource=value.handle, value=array)
    else:
        value.assign(array)


def save_variables(variables: Sequence[Any], directory: Path) -> None:
    index = []
    offset = 0
    with open(directory / VARIABLES_FILE, "wb") as f:
        for v in variables:
            array = _read(_local(variable_value(v)))  # ~10x keras.ops.convert_to_numpy
            f.write(np.ascontiguousarray(array.reshape(-1)).data.cast("B"))
            index.append(
                {
                    "path": variable_path(v),
                    "dtype": array.dtype.str,
                    "shape": list(array.shape),
                    "offset": offset,
                    "nbytes": array.nbytes,
                }
            )
            offset += array.nbytes
    (directory / VARIABLES_INDEX).write_text(json.dumps(index))


def restore_variables(variables: Sequence[Any], directory: Path) -> None:
    index = json.loads((directory / VARIABLES_INDEX).read_text())
    if len(index) != len(variables):
        raise CheckpointMismatchError(
            f"the checkpoint holds {len(index)} variables but the model and optimizer have "
            f"{len(variables)}: was the model definition or its hyperparameters changed?"
        )
    path = directory / VARIABLES_FILE
    # Mapped, not read into a fresh buffer: each slice is copied once, straight into TF.
    blob = (
        np.memmap(path, dtype=np.uint8, mode="r") if path.stat().st_size else np.zeros(0, np.uint8)
    )
    for variable, entry in zip(variables, index, strict=True):
        shape = tuple(entry["shape"])
        if tuple(variable.shape) != shape:
            raise CheckpointMismatchError(
                f"variable {variable_path(variable)} has shape {tuple(variable.shape)} in the "
                f"model but {shape} in the checkpoint ({entry['path']})"
            )
        raw = blob[entry["offset"] : entry["offset"] + entry["nbytes"]]
        _assign(variable_value(variable), raw.view(np.dtype(entry["dtype"])).reshape(shape))


def lookup_tables(model: keras.Model) -> list[Any]:
    """The model's Keras 2 lookup tables (a vocabulary: keys and values), in order."""
    return [w for w in model.weights if _is_lookup_table(w)]


def save_lookup_tables(model: keras.Model, directory: Path) -> None:
    """Write the tensors of the model's lookup tables (none: no file)."""
    tables = lookup_tables(model)
    if tables:
        with open(directory / LOOKUP_TABLES_FILE, "wb") as f:
            pickle.dump(
                [[np.asarray(t.numpy()) for t in table.get_tensors()] for table in tables], f
            )


def restore_lookup_tables(model: keras.Model, directory: Path) -> None:
    """Set the model's lookup tables to the checkpoint's."""
    tables = lookup_tables(model)
    path = directory / LOOKUP_TABLES_FILE
    saved: list[list[np.ndarray]] = []
    if path.exists():
        with open(path, "rb") as f:
            saved = pickle.load(f)
    if len(saved) != len(tables):
        raise CheckpointMismatchError(
            f"the checkpoint holds {len(saved)} lookup tables (vocabularies) but the model has "
            f"{len(tables)}: was the model definition changed?"
        )
    for table, tensors in zip(tables, saved, strict=True):
        table.set_weights(tensors)


def restore_weights(weights: Sequence[Any], directory: Path) -> None:
    """Load ``weights`` (a model's ``weights``) from a checkpoint's variables, matched by
    path: a warm start takes the weights and leaves the optimizer, the seed generators and
    the counters as they are."""
    weights = [w for w in weights if not _is_lookup_table(w)]
    index = json.loads((directory / VARIABLES_INDEX).read_text())
    by_path: dict[str, dict[str, Any]] = {}
    for entry in index:
        by_path.setdefault(entry["path"], entry)  # the model's variables come first
    missing = [variable_path(w) for w in weights if variable_path(w) not in by_path]
    if missing:
        raise CheckpointMismatchError(
            f"the checkpoint has no weights named {', '.join(missing[:5])}"
            f"{' ...' if len(missing) > 5 else ''}: is it from a different model?"
        )
    path = directory / VARIABLES_FILE
    blob = (
        np.memmap(path, dtype=np.uint8, mode="r") if path.stat().st_size else np.zeros(0, np.uint8)
    )
    for weight in weights:
        entry = by_path[variable_path(weight)]
        shape = tuple(entry["shape"])
        if tuple(weight.shape) != shape:
            raise CheckpointMismatchError(
                f"weight {variable_path(weight)} has shape {tuple(weight.shape)} in the model but "
                f"{shape} in the checkpoint"
            )
        raw = blob[entry["offset"] : entry["offset"] + entry["nbytes"]]
        _assign(variable_value(weight), raw.view(np.dtype(entry["dtype"])).reshape(shape))


def local_generator_states(model: keras.Model) -> list[np.ndarray]:
    """This worker's copies of the states of a Keras 2 model's random generators.

    Under a multi-worker strategy each worker advances its own copy of a generator's state
    (TensorFlow mixes the replica into the generator's key, and the copies need not move
    alike), so the chief's copy, which :func:`save_variables` writes, is not every worker's:
    the chief gathers these into the checkpoint (:func:`save_worker_generators`)."""
    return [np.asarray(_local(state).numpy()) for state in seed_generator_states(model)]


def save_worker_generators(states: list[list[np.ndarray]], directory: Path) -> None:
    """Write every worker's :func:`local_generator_states`, by rank."""
    with open(directory / WORKER_GENERATORS_FILE, "wb") as f:
        pickle.dump(states, f)


def restore_worker_generators(model: keras.Model, directory: Path, rank: int) -> None:
    """Give this worker's copies of the generators' states the ones it had when the
    checkpoint was written (after :func:`restore_variables`, which gave them the chief's).
    Nothing when the checkpoint has none for this rank (written by fewer workers)."""
    path = directory / WORKER_GENERATORS_FILE
    if not path.exists():
        return
    with open(path, "rb") as f:
        states = pickle.load(f)
    if rank >= len(states):
        return
    for variable, value in zip(seed_generator_states(model), states[rank], strict=True):
        _local(variable).assign(value)


def save_rng(directory: Path) -> None:
    state = {
        "python": random.getstate(),
        "numpy": np.random.get_state(),
        "tensorflow": tf.random.get_global_generator().state.numpy(),
    }
    with open(directory / RNG_FILE, "wb") as f:
        pickle.dump(state, f)


def restore_rng(directory: Path) -> None:
    with open(directory / RNG_FILE, "rb") as f:
        state = pickle.load(f)
    random.setstate(state["python"])
    np.random.set_state(state["numpy"])
    # read_value=False: no read-back variable object (a fixed cost of every restore)
    tf.random.get_global_generator().state.assign(state["tensorflow"], read_value=False)
