"""Defaults the engine applies to a config, wherever the experiment runs."""

from __future__ import annotations

from pathlib import Path

from pedl.config import ExperimentConfig, parse_config


def with_default_storage(config: ExperimentConfig, checkpoint_dir: str | Path) -> ExperimentConfig:
    """``config`` with ``shared_fs`` checkpoint storage in ``checkpoint_dir`` when it names no
    storage of its own (the master passes its ``checkpoint_dir``; local mode the run's
    ``checkpoints/`` directory)."""
    if "checkpoint_storage" in config.model_fields_set:
        return config
    storage = {"type": "shared_fs", "host_path": str(Path(checkpoint_dir).resolve())}
    return parse_config({**config.as_dict(), "checkpoint_storage": storage})
