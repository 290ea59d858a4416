"""A submitted config that leaves its searcher to its KerasTuner script (see
:mod:`pedl.tuner`'s ``implied_config``): the master fills it in before validating it."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

from pedl import model_def
from pedl.config import ConfigError
from pedl.config._overrides import overridden_document
from pedl.master.api._errors import ApiError
from pedl.master.api._schemas import ErrorIssue
from pedl.master.rm import trial_environment
from pedl.tuner import ImpliedSearchError, implied_config, wants_implied_searcher


def with_implied_searcher(source: str | dict[str, Any], archive: bytes) -> str | dict[str, Any]:
    """``source`` as a mapping with the searcher its KerasTuner script implies, or
    ``source`` unchanged where it implies none (a searcher named, no KerasTuner script: the
    config's validation says what is missing). The script runs up to ``tuner.search`` in a
    process of its own, with a trial's environment, from a copy of the model definition.
    Raises :class:`ApiError` 422 on ``config.searcher`` where the search cannot be read."""
    document: Any = source
    if isinstance(source, str):
        try:
            document = overridden_document(source, ())
        except ConfigError:
            return source  # its validation reports it, with lines
    if not isinstance(document, dict) or not wants_implied_searcher(document):
        return source
    with tempfile.TemporaryDirectory(prefix="pedl-implied-searcher-") as tmp:
        code_dir = Path(tmp) / "code"
        model_def.extract(archive, code_dir)
        try:
            implied = implied_config(document, code_dir, env=trial_environment(os.environ))
        except ImpliedSearchError as err:
            where = "config.searcher"
            message = f"the searcher the config leaves to its KerasTuner script: {err}"
            raise ApiError(
                422, message, field=where, issues=[ErrorIssue(field=where, message=str(err))]
            ) from err
    return source if implied is None else implied
