"""The engine's retention rule, which the driver and the master's API both apply."""

from __future__ import annotations

from pedl.config import parse_config
from pedl.engine import TrialRecord, checkpoints_past_retention
from pedl.storage import CheckpointSummary
from pedl.vocabulary import TrialState

CONFIG = """
entrypoint: model_def:MyTrial
searcher: {name: random, max_trials: 3, metric: loss, max_length: {batches: 10}}
checkpoint_storage:
  type: shared_fs
  host_path: /tmp
  save_experiment_best: 0
  save_trial_best: 0
  save_trial_latest: 0
"""


def test_a_live_trial_keeps_what_it_would_resume_from() -> None:
    """Even a policy that keeps nothing leaves a trial that may still run its latest
    checkpoint, or the one it starts from (a PBT child's parent checkpoint) until it has one
    of its own; an ended trial's are deleted."""
    config = parse_config(CONFIG)
    checkpoints = [
        CheckpointSummary(f"c{i}", trial_id=i, total_batches=10, metric=0.5) for i in range(4)
    ]

    def trial(trial_id: int, state: TrialState, **checkpoints: str) -> TrialRecord:
        return TrialRecord(trial_id, trial_id, {}, seed=0, state=state, **checkpoints)

    trials = [
        trial(1, TrialState.ACTIVE, latest_checkpoint="c1", warm_start="c0"),
        trial(2, TrialState.ACTIVE, warm_start="c2"),
        trial(3, TrialState.COMPLETED, latest_checkpoint="c3", warm_start="c0"),
    ]
    assert checkpoints_past_retention(config, checkpoints, trials) == {"c0", "c3"}
