"""The estimator's model directory and PEDL checkpoints: moving its latest checkpoint in and out."""

from __future__ import annotations

import shutil
from pathlib import Path

import tensorflow as tf

GRAPH_FILE = "graph.pbtxt"
STATE_FILE = "checkpoint"
"""TensorFlow's checkpoint-state file, which names the latest checkpoint."""


def latest_prefix(directory: Path) -> str | None:
    """The file prefix (``model.ckpt-N``) of the latest checkpoint in ``directory``, if any."""
    latest = tf.train.latest_checkpoint(str(directory))
    return Path(latest).name if latest else None


def copy_latest(source: Path, target: Path) -> str:
    """Copy the latest checkpoint of ``source`` (its ``model.ckpt-N.*`` files, and the graph
    if written) into ``target`` and write a checkpoint-state file there that names it by a
    relative path, so the copy can be moved; return the prefix."""
    prefix = latest_prefix(source)
    if prefix is None:
        raise FileNotFoundError(f"no TensorFlow checkpoint in {source}")
    target.mkdir(parents=True, exist_ok=True)
    for path in source.glob(f"{prefix}.*"):
        shutil.copy2(path, target / path.name)
    if (source / GRAPH_FILE).is_file():
        shutil.copy2(source / GRAPH_FILE, target / GRAPH_FILE)
    tf.compat.v1.train.update_checkpoint_state(
        str(target), prefix, all_model_checkpoint_paths=[prefix]
    )
    return prefix


def prune(directory: Path) -> None:
    """Delete every checkpoint in ``directory`` but the latest (each chunk of training saves
    one)."""
    prefix = latest_prefix(directory)
    if prefix is None:
        return
    for path in directory.glob("model.ckpt-*"):
        if not path.name.startswith(f"{prefix}."):
            path.unlink()
