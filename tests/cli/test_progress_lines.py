"""``--follow`` and ``experiment wait`` print a line per trial as it finishes (issue 24, item
6): piped (``make demo | tee``), where rich draws its bar only once at the end, these lines are
the progress. Against a real master."""

from __future__ import annotations

import io
from pathlib import Path

from rich.console import Console

from pedl.cli._progress import ExperimentProgress, planned_trials
from pedl.client import Client
from pedl.vocabulary import TrialState
from tests.client.helpers import LiveMaster, report


def test_a_line_per_trial_as_it_finishes_when_piped(
    master: LiveMaster, client: Client, config_file: Path, model_dir: Path
) -> None:
    experiment = client.create_experiment(config_file, model_dir)
    trial_ids = []
    for val_loss in (0.4, 0.1):
        trial_id, token = master.create_trial(experiment.id, lr=val_loss)
        with master.trial_api(token) as api:
            report(api, trial_id, "training", 5, loss=1.5)
            report(api, trial_id, "validation", 5, val_loss=val_loss)
        trial_ids.append(trial_id)
    first, second = trial_ids
    master.set_trial_state(first, TrialState.COMPLETED)
    piped = io.StringIO()
    console = Console(file=piped, force_terminal=False, width=200)
    with ExperimentProgress(console) as bar:
        bar.update(experiment.reload())
        lines = piped.getvalue().splitlines()
        assert lines == [
            f"trial {first} COMPLETED: best val_loss=0.4 after 5 batches (1 of 2 trials done)"
        ]
        bar.update(experiment.reload())  # nothing new: no line
        assert piped.getvalue().splitlines() == lines
        master.set_trial_state(second, TrialState.ERROR)
        bar.update(experiment.reload())
        assert piped.getvalue().splitlines()[1:] == [
            f"trial {second} ERROR: best val_loss=0.1 after 5 batches (2 of 2 trials done)"
        ]


def test_the_count_of_trials_is_the_searchs_not_those_made_so_far(
    master: LiveMaster, client: Client, config_file: Path, model_dir: Path
) -> None:
    """A 6-trial random search with 2 trials made so far: '1 of 6', not '1 of 2'."""
    experiment = client.create_experiment(
        config_file,
        model_dir,
        overrides=["searcher.name=random", "searcher.max_trials=6"],
        activate=False,
    )
    first, _ = master.create_trial(experiment.id, lr=0.1)
    master.create_trial(experiment.id, lr=0.2)
    master.set_trial_state(first, TrialState.COMPLETED)
    piped = io.StringIO()
    with ExperimentProgress(Console(file=piped, force_terminal=False, width=200)) as bar:
        bar.update(experiment.reload())
    assert piped.getvalue().splitlines()[0].endswith("(1 of 6 trials done)"), piped.getvalue()


def test_planned_trials() -> None:
    assert planned_trials({"searcher": {"name": "random", "max_trials": 6}}) == 6
    assert planned_trials({"searcher": {"name": "adaptive_asha", "max_trials": 16}}) == 16
    assert planned_trials({"searcher": {"name": "single", "max_length": {"batches": 1}}}) == 1
    grid = {
        "searcher": {"name": "grid"},
        "hyperparameters": {
            "lr": {"type": "double", "minval": 0.1, "maxval": 0.2, "count": 3},
            "units": {"type": "categorical", "vals": [1, 2]},
            "fixed": 4,
        },
    }
    assert planned_trials(grid) == 6
    assert planned_trials({"searcher": {"name": "custom"}}) is None
