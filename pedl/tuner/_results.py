"""The code after ``tuner.search`` of a KerasTuner script, on a PEDL experiment's results.

PEDL runs a search's trials as processes of their own, so the script's code after
``tuner.search(...)`` (``get_best_models``, ``get_best_hyperparameters``,
``results_summary``) has no search to read in any of them. It runs when the user runs the
script with the finished experiment's id: ``python -m pedl.tuner EXPERIMENT_ID`` (the
experiment's own entrypoint, in the current directory) or ``python -m pedl.tuner
EXPERIMENT_ID search.py --flags``. There ``tuner.search`` trains nothing: it fills the
tuner's oracle with the experiment's trials (their hyperparameters as KerasTuner's
``HyperParameters``, the best value of the searcher metric as the score), and the tuner's
``load_model`` builds a trial's model with ``hypermodel.build(hp)`` and loads the weights of
the trial's best checkpoint, downloaded from the master.
"""

from __future__ import annotations

import json
import runpy
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import keras_tuner
import numpy as np

from pedl import client as pedl_client
from pedl.tuner import _implied as implied
from pedl.tuner._capture import as_main_script, search_replaced
from pedl.tuner._space import keras_tuner_values

VARIABLES_FILE = "variables.bin"
VARIABLES_INDEX = "variables.json"
STATE_DIR = "state"
"""Where a script trial's checkpoint keeps its variables (:mod:`pedl.keras`'s layout)."""


class ResultsError(RuntimeError):
    """The experiment's results cannot be given to the script; the message says why."""


def script_of(entrypoint: str) -> tuple[str, tuple[str, ...]]:
    """The script and arguments of a script entrypoint (``python3 search.py --flags`` or
    ``search.py --flags``)."""
    script = implied.script_of(entrypoint)
    if script is None:
        raise ResultsError(f"the entrypoint {entrypoint!r} names no script")
    return script


def run_with_results(
    experiment: Any,
    script: Path,
    args: Sequence[str],
    *,
    download_dir: Path | None = None,
) -> None:
    """Run ``script`` (in the current directory, as ``python3 script args``) with its
    ``tuner.search`` reading ``experiment`` (a :class:`pedl.client.Experiment`); see the
    module docstring. Checkpoints are downloaded into ``download_dir`` (default: a temporary
    directory removed afterwards)."""
    with tempfile.TemporaryDirectory(prefix="pedl-tuner-") as scratch:
        where = download_dir or Path(scratch)

        def search(tuner: Any, *fit_args: Any, **fit_kwargs: Any) -> None:
            load_results(tuner, experiment, where)

        with search_replaced(search), as_main_script(script, tuple(args), Path.cwd()):
            runpy.run_path(str(script), run_name="__main__")


def load_results(tuner: Any, experiment: Any, download_dir: Path) -> None:
    """Fill ``tuner``'s oracle with the trials of ``experiment`` and make its ``load_model``
    load a trial's model from the trial's best checkpoint (downloaded into
    ``download_dir``)."""
    space = tuner.oracle.get_space()
    oracle = tuner.oracle
    trials = {str(t.id): t for t in experiment.list_trials()}
    if not trials:
        raise ResultsError(f"experiment {experiment.id} has no trials")
    oracle.trials = {}
    oracle.ongoing_trials = {}
    oracle.end_order = []
    for trial_id, trial in trials.items():
        kt_trial = keras_tuner.engine.trial.Trial(
            hyperparameters=keras_tuner_values(space, trial.hparams), trial_id=trial_id
        )
        if trial.best_validation is not None and trial.state.value == "COMPLETED":
            kt_trial.status = keras_tuner.engine.trial.TrialStatus.COMPLETED
            kt_trial.score = float(trial.best_validation)
        else:
            kt_trial.status = keras_tuner.engine.trial.TrialStatus.FAILED
            kt_trial.message = f"PEDL trial {trial.id} is {trial.state.value}"
        oracle.trials[trial_id] = kt_trial
        oracle.end_order.append(trial_id)

    def load_model(kt_trial: Any) -> Any:
        trial = trials[str(kt_trial.trial_id)]
        checkpoint = trial.select_checkpoint(best=True) or trial.select_checkpoint(latest=True)
        if checkpoint is None:
            raise ResultsError(f"PEDL trial {trial.id} has no checkpoint to load its model from")
        path = checkpoint.download(download_dir / checkpoint.uuid)
        model = tuner.hypermodel.build(kt_trial.hyperparameters)
        load_weights(model, path / STATE_DIR)
        return model

    tuner.load_model = load_model


def load_weights(model: Any, state_dir: Path) -> None:
    """Set ``model``'s variables (weights and random generators' states) to a script trial
    checkpoint's, in order: the checkpoint lists the model's variables first, in
    ``model.variables``' order (their names differ between processes, as Keras numbers its
    layers)."""
    index = json.loads((state_dir / VARIABLES_INDEX).read_text())
    variables = model.variables
    if len(index) < len(variables):
        raise ResultsError(
            f"the checkpoint in {state_dir.parent} holds {len(index)} variables, fewer than "
            f"the model's {len(variables)}: is it from a different model?"
        )
    blob = np.fromfile(state_dir / VARIABLES_FILE, dtype=np.uint8)
    values = []
    for variable, entry in zip(variables, index, strict=False):
        shape = tuple(entry["shape"])
        if tuple(variable.shape) != shape:
            raise ResultsError(
                f"variable {variable.path} has shape {tuple(variable.shape)} in the model but "
                f"{shape} in the checkpoint (as {entry['path']}): is it from a different model?"
            )
        raw = blob[entry["offset"] : entry["offset"] + entry["nbytes"]]
        values.append(raw.view(np.dtype(entry["dtype"])).reshape(shape))
    for variable, value in zip(variables, values, strict=True):
        variable.assign(value)


def get_experiment(experiment_id: int) -> Any:
    """The experiment from the default client (``PEDL_MASTER``, signed in as the SDK
    signs in)."""
    return pedl_client.get_experiment(experiment_id)
