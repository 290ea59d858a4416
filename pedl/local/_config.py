"""The config of a local run (``--local`` and ``--test``): the file, with the searcher its
KerasTuner script implies where it leaves the searcher to the script."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from pedl import tuner
from pedl.config import ConfigError, ConfigIssue, ExperimentConfig, load_config, parse_config
from pedl.config._overrides import overridden_document


def load_run_config(
    config_path: str | Path, model_dir: str | Path, overrides: Sequence[str] = ()
) -> ExperimentConfig:
    """The config at ``config_path``, with the searcher its KerasTuner script implies where
    it leaves it to the script (:func:`pedl.tuner.implied_config`)."""
    name = Path(config_path).name
    try:
        document = overridden_document(Path(config_path).read_text(encoding="utf-8"), overrides)
    except ConfigError:
        document = None  # load_config reports it, with lines
    if isinstance(document, dict) and tuner.wants_implied_searcher(document):
        try:
            implied = tuner.implied_config(document, Path(model_dir))
        except tuner.ImpliedSearchError as err:
            raise ConfigError([ConfigIssue("searcher", str(err))], name) from err
        if implied is not None:
            return parse_config(implied, name=name)
    return load_config(config_path, overrides)
