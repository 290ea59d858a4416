"""Paths on the master's machine that a config names, kept inside the roots it allows."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from pedl.config._experiment import ExperimentConfig
from pedl.config._issues import ConfigError, ConfigIssue, PathElement, format_path
from pedl.config._storage import DirectoryStorageConfig, SharedFSStorageConfig


def _named_paths(config: ExperimentConfig) -> list[tuple[tuple[PathElement, ...], str]]:
    """Every path on this machine that PEDL reads or writes because the config names it, with
    its field path; a shared_fs ``storage_path`` joined to its ``host_path``. Determined's
    ``bind_mounts`` and ``tensorboard_storage`` are not among them: PEDL ignores those
    fields (a warning says so), so their paths are never opened."""
    named: list[tuple[tuple[PathElement, ...], str]] = []
    storage = config.checkpoint_storage
    if isinstance(storage, SharedFSStorageConfig):
        named.append((("checkpoint_storage", "host_path"), storage.host_path))
        if storage.storage_path is not None:
            joined = os.path.join(os.path.expanduser(storage.host_path), storage.storage_path)
            named.append((("checkpoint_storage", "storage_path"), joined))
    elif isinstance(storage, DirectoryStorageConfig):
        named.append((("checkpoint_storage", "container_path"), storage.container_path))
    return named


def check_storage_roots(config: ExperimentConfig, roots: Sequence[Path]) -> None:
    """Raise ConfigError naming each path of ``config`` on this machine (checkpoint storage's
    ``host_path``, ``storage_path`` and ``container_path``) that is not inside one of
    ``roots`` once ``~`` is expanded and symbolic links are resolved (``roots`` must be
    resolved already)."""
    issues = []
    allowed = ", ".join(str(root) for root in roots)
    for where, given in _named_paths(config):
        resolved = Path(os.path.realpath(os.path.expanduser(given)))
        if not any(resolved.is_relative_to(root) for root in roots):
            issues.append(
                ConfigIssue(
                    format_path(where),
                    f"'{given}' is outside the directories this master lets configs use "
                    f"({allowed}); choose a path inside one of them, or ask the operator to "
                    "add it to the master's storage_roots setting",
                )
            )
    if issues:
        raise ConfigError(issues, "<config>")
