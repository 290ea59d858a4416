"""Defaults the engine applies to a config, wherever the experiment runs."""

from __future__ import annotations

from pathlib import Path

from pedl.config import ExperimentConfig, parse_config


def with_default_storage(config: ExperimentConfig, checkpoint_dir: str | Path) -> ExperimentConfig:
    """``config`` with ``shared_fs`` checkpoint storage in ``checkpoint_dir`` when it names no
    storage of its own (the master passes its ``checkpoint_dir``; local mode the run's
    ``checkpoints/`` directory). A block without ``type`` (``merged_over_default``) keeps its
    fields over that default, as Determined merges it over the cluster's."""
    given = config.checkpoint_storage
    if "checkpoint_storage" in config.model_fields_set and not given.merged_over_default:
        return config
    storage = {"type": "shared_fs", "host_path": str(Path(checkpoint_dir).resolve())}
    if given.merged_over_default:  # a block without type: its fields over the default
        fields = given.model_dump(mode="json", exclude_unset=True)
        for key in ("type", "host_path", "merged_over_default"):
            fields.pop(key, None)
        storage = {**fields, **storage}
    return parse_config({**config.as_dict(), "checkpoint_storage": storage})
