"""Loading a trained model back from a checkpoint directory: PEDL's and Determined's.

A PEDL TFKerasTrial checkpoint (``metadata.json`` with format ``pedl.keras/1``) holds the
model definition (``code/``), the trial's hyperparameters and every variable. Determined's
TFKerasTrial checkpoints hold the same code directory and one of:

- ``load_data.json`` (Determined 0.17.8 on) and the weights as a TensorFlow checkpoint with
  the prefix ``determined-keras-model-weights``;
- ``metadata.json`` (written by ``Checkpoint.download()`` up to 0.17.7) whose ``format`` is
  ``saved_weights`` (the same TensorFlow checkpoint), ``h5`` (``determined-keras-model.h5``,
  before 0.13.8) or ``saved_model`` (a SavedModel directory, also EstimatorTrial's);
- a Keras 3 weights file (``*.weights.h5``) or model file (``*.keras``).

Except for a SavedModel, which loads as TensorFlow's ``AutoTrackable`` (call its
``signatures``), the model is rebuilt by the trial's own ``build_model`` with the checkpoint's
hyperparameters and its weights are loaded into it.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import numpy as np
import tensorflow as tf

from pedl import core, model_def
from pedl.config import ConfigError, parse_config
from pedl.keras import _state
from pedl.keras._build import build_variables
from pedl.keras._context import TFKerasTrialContext
from pedl.keras._controller import CHECKPOINT_FORMAT
from pedl.keras._data import make_validation_input
from pedl.keras._keras import keras, mode_mismatch, use_checkpointable_rng

if TYPE_CHECKING:
    from pedl.keras._trial import TFKerasTrial

logger = logging.getLogger("pedl.keras")

_STATE_DIR = "state"
_LOAD_DATA = "load_data.json"
_DETERMINED_WEIGHTS = "determined-keras-model-weights"
_DETERMINED_H5 = "determined-keras-model.h5"
_ATTRIBUTE = ".ATTRIBUTES/VARIABLE_VALUE"


class CheckpointFormatError(ValueError):
    """The directory is not a checkpoint PEDL can load a Keras model from; the message says
    what was found."""


def load_model_from_checkpoint_path(
    path: str | os.PathLike[str], tags: list[str] | None = None
) -> Any:
    """Load the model a TFKerasTrial checkpoint (PEDL's or Determined's) holds.

    Download the checkpoint first (``Checkpoint.download``). Returns a ``keras.Model`` with the
    trained weights (for PEDL checkpoints also the optimizer's state), or, for a checkpoint
    holding a SavedModel, TensorFlow's loaded object; ``tags`` choose the SavedModel's
    meta-graph (default ``["serve"]``) and are ignored otherwise.
    """
    checkpoint = Path(path)
    if not checkpoint.is_dir():
        raise CheckpointFormatError(f"{checkpoint} is not a checkpoint directory")
    metadata = _read_json(checkpoint / core.METADATA_FILE)
    load_data = _read_json(checkpoint / _LOAD_DATA)
    if metadata.get("format") == CHECKPOINT_FORMAT:
        mismatch = mode_mismatch(metadata.get("keras_version"))
        if mismatch is not None:
            raise CheckpointFormatError(f"{checkpoint}: {mismatch}")
        use_checkpointable_rng()
        model = _rebuild(checkpoint, metadata)
        _state.restore_variables(_state.model_variables(model), checkpoint / _STATE_DIR)
        _state.restore_lookup_tables(model, checkpoint / _STATE_DIR)
        return model
    if load_data:
        if load_data.get("trial_type", "TFKerasTrial") != "TFKerasTrial":
            logger.warning(
                "%s was written by a %s, not a TFKerasTrial; loading it anyway",
                checkpoint,
                load_data.get("trial_type"),
            )
        return _load_determined_weights(checkpoint, load_data)
    save_format = metadata.get("format")
    saved_models = sorted(checkpoint.glob("**/saved_model.pb"))
    if save_format == "saved_model" or (saved_models and not save_format):
        return _load_saved_model(checkpoint, saved_models, tags)
    if save_format in ("saved_weights", "h5") or _weights_file(checkpoint) is not None:
        if "experiment_config" not in metadata or "hparams" not in metadata:
            raise CheckpointFormatError(
                f"{checkpoint} holds Keras weights but its metadata.json does not name the "
                "experiment config and hyperparameters needed to rebuild the model; download "
                "the checkpoint with its metadata (Determined: Checkpoint.download() or "
                "Checkpoint.write_metadata_file('metadata.json'))"
            )
        return _load_determined_weights(checkpoint, metadata)
    found = ", ".join(sorted(p.name for p in checkpoint.iterdir())) or "nothing"
    raise CheckpointFormatError(
        f"{checkpoint} is not a TFKerasTrial checkpoint: found {found}; expected PEDL's "
        f"metadata.json (format {CHECKPOINT_FORMAT!r}), or Determined's load_data.json or "
        "metadata.json with Keras weights or a SavedModel"
    )


def _read_json(path: Path) -> dict[str, Any]:
    if not path.is_file():
        return {}
    data = json.loads(path.read_text())
    return data if isinstance(data, dict) else {}


def _rebuild(checkpoint: Path, info: dict[str, Any]) -> keras.Model:
    """Build the trial's model from the checkpoint's code, config and hyperparameters."""
    config: dict[str, Any] = dict(info["experiment_config"])
    entrypoint = info.get("trial_cls_spec") or config.get("entrypoint")
    if entrypoint and ":" not in str(entrypoint):
        entrypoint = None  # a script entrypoint: the package exposes no Trial to rebuild with
    definition = model_def.load(checkpoint / "code", entrypoint)
    if definition.trial_class is None:
        raise CheckpointFormatError(
            f"the model definition in {checkpoint / 'code'} has no Trial class"
        )
    context = core.detached_context(
        _loadable_config(config),
        hparams=info["hparams"],
        trial_id=int(info.get("trial_id", 0) or 0),
        experiment_id=int(info.get("experiment_id", 0) or 0),
        trial_seed=int(info.get("trial_seed", 0) or 0),
        code_dir=checkpoint / "code",
    )
    trial = cast("TFKerasTrial", definition.trial_class(TFKerasTrialContext(context)))
    model: keras.Model = trial.build_model()
    hparams = info["hparams"]
    validation = make_validation_input(
        trial.build_validation_data_loader(),
        is_wrapped_dataset=lambda _: True,
        batch_size=lambda: int(hparams.get("global_batch_size", 1)),
    )
    build_variables(model, _first_batch(validation))
    return model


def _loadable_config(config: dict[str, Any]) -> Any:
    """The checkpoint's config, or the parts of it a model needs when PEDL cannot read all of
    it (a Determined config with fields of a later Determined version)."""
    try:
        return parse_config(config)
    except ConfigError:
        searcher = config.get("searcher") or {}
        return {
            "data": config.get("data") or {},
            "records_per_epoch": config.get("records_per_epoch") or 0,
            "searcher": {
                "name": "single",
                "metric": searcher.get("metric", "val_loss"),
                "max_length": {"batches": 1},
            },
        }


def _load_saved_model(checkpoint: Path, saved_models: list[Path], tags: list[str] | None) -> Any:
    if len(saved_models) != 1:
        raise CheckpointFormatError(
            f"{checkpoint} holds {len(saved_models)} SavedModels (saved_model.pb files); "
            "expected exactly one"
        )
    return tf.saved_model.load(str(saved_models[0].parent), tags=tags or ["serve"])


def _first_batch(validation: dict[str, Any]) -> Any:
    x = validation["x"]
    if isinstance(x, tf.data.Dataset):
        for batch in x.take(1):
            return batch
    return x[0]


def _weights_file(checkpoint: Path) -> Path | None:
    for pattern in ("*.weights.h5", "*.keras", _DETERMINED_H5, f"{_DETERMINED_WEIGHTS}.index"):
        found = sorted(checkpoint.glob(pattern))
        if found:
            return found[0]
    return None


def _load_determined_weights(checkpoint: Path, info: dict[str, Any]) -> keras.Model:
    model = _rebuild(checkpoint, info)
    weights = _weights_file(checkpoint)
    if weights is None:
        raise CheckpointFormatError(
            f"{checkpoint} names no weights file: expected {_DETERMINED_WEIGHTS}.index, "
            f"{_DETERMINED_H5}, *.weights.h5 or *.keras"
        )
    if weights.name.endswith(".index"):
        load_tf_checkpoint_weights(model, str(weights)[: -len(".index")])
    else:
        model.load_weights(str(weights))
    return model


def load_tf_checkpoint_weights(model: keras.Model, prefix: str) -> None:
    """Load weights that tf.keras 2 saved in TensorFlow's checkpoint format
    (``model.save_weights(prefix)``: ``prefix.index`` and ``prefix.data-*``) into ``model``.

    tf.keras named each weight ``layer_with_weights-N/<attribute>`` after the N-th layer that
    has weights (nested models nest the names); Keras 3 no longer reads that format, so PEDL
    matches the names to the model's layers itself.
    """
    reader = tf.train.load_checkpoint(prefix)
    stored = set(reader.get_variable_to_shape_map())
    missing: list[str] = []
    for key, variable in _checkpoint_keys(model, ""):
        name = f"{key}/{_ATTRIBUTE}"
        if name not in stored:
            missing.append(key)
            continue
        value = reader.get_tensor(name)
        if tuple(value.shape) != tuple(variable.shape):
            raise CheckpointFormatError(
                f"weight {variable.path} has shape {tuple(variable.shape)} in the model but "
                f"{tuple(value.shape)} in {prefix} ({key})"
            )
        variable.assign(np.asarray(value, dtype=variable.dtype))
    if missing:
        raise CheckpointFormatError(
            f"{prefix} has no weights for {', '.join(missing[:5])}"
            f"{' ...' if len(missing) > 5 else ''}: was the model definition or its "
            "hyperparameters changed?"
        )


def _checkpoint_keys(layer: Any, prefix: str) -> Iterator[tuple[str, Any]]:
    """(tf.keras checkpoint key, variable) for every weight of ``layer``'s sublayers."""
    index = 0
    for sublayer in layer.layers:
        if not sublayer.weights:
            continue
        key = f"{prefix}layer_with_weights-{index}"
        index += 1
        if getattr(sublayer, "layers", None):
            yield from _checkpoint_keys(sublayer, key + "/")
            continue
        for variable in sublayer.weights:
            yield f"{key}/{variable.name}", variable
