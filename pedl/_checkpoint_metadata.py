"""What every framework controller writes in a checkpoint's metadata and checks when it reads
one back (Keras, TensorFlowTrial, EstimatorTrial on TensorFlow 2.15). Framework-free: each
controller names its format, framework and library versions."""

from __future__ import annotations

import json
import platform
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pedl
from pedl import core
from pedl._trial_error import TrialError
from pedl.config import mask_config


def checkpoint_metadata(
    context: core.Context,
    *,
    checkpoint_format: str,
    framework: str,
    versions: Mapping[str, str],
    batches: int,
    validation_metrics: Mapping[str, float],
    **extra: Any,
) -> dict[str, Any]:
    """The metadata of a checkpoint taken after ``batches``: its format and framework, the
    versions it was written with (``versions``: e.g. ``tensorflow_version``), the trial's ids,
    hyperparameters, seed and masked config, the latest validation's metrics, the time, and
    ``extra`` (a controller's own fields) after ``steps_completed``."""
    info = context.info
    return {
        "format": checkpoint_format,
        "framework": framework,
        "pedl_version": pedl.__version__,
        **versions,
        "python_version": platform.python_version(),
        "steps_completed": batches,
        **extra,
        "trial_id": info.trial_id,
        "experiment_id": info.experiment_id,
        "hparams": info.hparams,
        "trial_seed": info.trial_seed,
        "experiment_config": mask_config(info.config.as_dict()),
        "validation_metrics": dict(validation_metrics),
        "time": time.time(),
    }


def read_checkpoint_metadata(
    path: Path, storage_id: str, *, checkpoint_format: str, what: str, reader: str
) -> dict[str, Any]:
    """The metadata of the checkpoint at ``path``; a :class:`TrialError` naming ``what``
    (``"checkpoint"``, ``"the warm-start checkpoint"``) and ``reader`` (who reads
    ``checkpoint_format``) when it has another format."""
    metadata: dict[str, Any] = json.loads((path / core.METADATA_FILE).read_text())
    if metadata.get("format") != checkpoint_format:
        raise TrialError(
            f"{what} {storage_id} has format {metadata.get('format')!r}; {reader} reads "
            f"{checkpoint_format!r}"
        )
    return metadata
