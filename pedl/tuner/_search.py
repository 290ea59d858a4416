"""The search method of a KerasTuner script: ``searcher.search_method:
pedl.tuner:KerasTunerSearch``.

It runs in the experiment's searcher process (that of every ``custom`` searcher, started by
the master or by local mode from the experiment's model definition). Constructed, it runs the
entrypoint script up to ``tuner.search(...)`` and reads the tuner as KerasTuner reads it: the
search space its oracle holds (every hyperparameter ``build_model(hp)`` registers, those of
conditional scopes included), its kind, objective and budget. It then hands every event to
the PEDL searcher that the tuner stands for (:mod:`pedl.tuner._searcher`), built from the
space mapped to PEDL hyperparameters (:mod:`pedl.tuner._space`). A master restart constructs
it again and replays the events: the script and the experiment seed give the same space and
the same draws.
"""

from __future__ import annotations

import logging
import math
import pathlib
import uuid
from pathlib import Path

from pedl import model_def
from pedl.config import ExperimentConfig, grid_size, parse_config
from pedl.searcher import (
    ExitedReason,
    Operation,
    SearcherState,
    SearchMethod,
    make_search_method,
    unavailable_reason,
)
from pedl.tuner._capture import SearchCall, capture_search
from pedl.tuner._searcher import TunerSetupError, kind_of, searcher_section
from pedl.tuner._space import pedl_hyperparameters

logger = logging.getLogger("pedl.tuner")


class KerasTunerSearch(SearchMethod):
    """Runs a KerasTuner script's search as PEDL's searcher: see the module docstring.

    ``config`` is the experiment's config: its entrypoint is the script, its ``searcher``
    section names this class (and the tuner's objective as ``metric`` and
    ``smaller_is_better``); its ``hyperparameters`` are not read (the tuner's space is).
    """

    def __init__(self, config: ExperimentConfig) -> None:
        self.call = read_search_call(Path.cwd(), config)
        tuner = self.call.tuner
        kind = kind_of(tuner)
        space = pedl_hyperparameters(tuner.oracle.get_space(), grid=kind == "grid")
        points = grid_size(space) if kind == "grid" else None
        document = config.as_dict()
        document["hyperparameters"] = space
        document["searcher"] = searcher_section(tuner, config, points)
        self.config = parse_config(document)
        """The experiment config of the search PEDL runs: the tuner's space and searcher."""
        missing = unavailable_reason(self.config)
        if missing is not None:
            oracle = type(tuner.oracle).__name__
            raise TunerSetupError(f"{oracle} runs as PEDL's gp searcher: {missing}")
        self._method = make_search_method(self.config)
        logger.info(
            "KerasTuner %s searches as PEDL's %s searcher %s over %s",
            type(tuner).__name__,
            kind,
            document["searcher"],
            space,
        )

    def initial_operations(self, searcher_state: SearcherState) -> list[Operation]:
        return self._method.initial_operations(searcher_state)

    def on_trial_created(
        self, searcher_state: SearcherState, request_id: uuid.UUID
    ) -> list[Operation]:
        return self._method.on_trial_created(searcher_state, request_id)

    def on_validation_completed(
        self,
        searcher_state: SearcherState,
        request_id: uuid.UUID,
        metric: float,
        train_length: int,
    ) -> list[Operation]:
        return self._method.on_validation_completed(
            searcher_state, request_id, metric, train_length
        )

    def on_trial_closed(
        self, searcher_state: SearcherState, request_id: uuid.UUID
    ) -> list[Operation]:
        return self._method.on_trial_closed(searcher_state, request_id)

    def on_trial_exited_early(
        self,
        searcher_state: SearcherState,
        request_id: uuid.UUID,
        exited_reason: ExitedReason,
    ) -> list[Operation]:
        return self._method.on_trial_exited_early(searcher_state, request_id, exited_reason)

    def progress(self, searcher_state: SearcherState) -> float:
        value = self._method.progress(searcher_state)
        return value if math.isfinite(value) else 0.0

    def save_method_state(self, path: pathlib.Path) -> None:
        self._method.save_method_state(path)

    def load_method_state(self, path: pathlib.Path) -> None:
        self._method.load_method_state(path)


def read_search_call(code_dir: Path, config: ExperimentConfig) -> SearchCall:
    """Run the experiment's entrypoint script (in ``code_dir``) up to its ``tuner.search``
    call and return it. Raises :class:`TunerSetupError` for an entrypoint that is not a
    script."""
    definition = model_def.load(code_dir, config.entrypoint)
    script = definition.entrypoint_script
    if script is None:
        raise TunerSetupError(
            f"the entrypoint {config.entrypoint!r} is not a script: a KerasTuner search runs "
            "from one (entrypoint: python3 search.py)"
        )
    return capture_search(code_dir / script, definition.entrypoint_args, code_dir)
