"""Loading a SavedModel that an EstimatorTrial checkpoint holds."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import tensorflow as tf

from pedl import core
from pedl.estimator._controller import CHECKPOINT_FORMAT


def load_estimator_from_checkpoint_path(
    path: str | os.PathLike[str], tags: list[str] | None = None, *, key: str | None = None
) -> Any:
    """Load the SavedModel exported into an EstimatorTrial checkpoint directory (download it
    first: ``Checkpoint.download``), for inference: ``loaded.signatures["predict"](...)``.

    ``key`` names which of ``build_serving_input_receiver_fns()``'s exports to load; it may be
    left out when there is one. ``tags`` default to ``["serve"]``.
    """
    checkpoint = Path(path)
    metadata = json.loads((checkpoint / core.METADATA_FILE).read_text())
    if metadata.get("format") != CHECKPOINT_FORMAT:
        raise ValueError(
            f"{checkpoint} is not an EstimatorTrial checkpoint (format {metadata.get('format')!r})"
        )
    exports: dict[str, str] = metadata.get("saved_models", {})
    if not exports:
        raise ValueError(
            f"the checkpoint {checkpoint} holds no SavedModel: the trial's "
            "build_serving_input_receiver_fns() returned none"
        )
    if key is None:
        if len(exports) > 1:
            raise ValueError(
                f"the checkpoint {checkpoint} holds several SavedModels "
                f"({', '.join(sorted(exports))}): choose one with key="
            )
        (key,) = exports
    if key not in exports:
        raise KeyError(
            f"the checkpoint {checkpoint} has no SavedModel {key!r}; it has: "
            f"{', '.join(sorted(exports))}"
        )
    return tf.saved_model.load(str(checkpoint / exports[key]), tags or ["serve"])
