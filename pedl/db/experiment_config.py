"""Changing a stored experiment's config after it was created (``det experiment set
max-slots / priority / weight / gc-policy``, ``det experiment continue``): the master reads
the stored config when it (re)starts the experiment, so a change outlives a restart. The
config as first submitted (``config_text``) stays as it was, as Determined keeps its
original config beside the active one."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from sqlalchemy.orm import Session

from pedl.db._models import Experiment
from pedl.db.experiments import get_experiment


def set_config_fields(
    session: Session, experiment_id: int, changes: Mapping[tuple[str, str], Any]
) -> Experiment:
    """Set ``config[section][key] = value`` for each ``(section, key): value`` of
    ``changes`` in the experiment's stored config; raises :class:`NotFoundError`."""
    experiment = get_experiment(session, experiment_id, for_update=True)
    config = copy.deepcopy(dict(experiment.config))
    for (section, key), value in changes.items():
        part = config.get(section)
        part = dict(part) if isinstance(part, Mapping) else {}
        part[key] = value
        config[section] = part
    experiment.config = config  # a new object: the JSON column sees the change
    session.flush()
    return experiment
