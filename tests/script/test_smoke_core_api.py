"""``--test`` on a Determined Core API tutorial script (stage 3's loop over the searcher's
operations, a checkpoint every 5 steps, ``should_preempt()`` after each): the two-batch
chunk stores no checkpoint, so the script runs again until its first checkpoint, is asked to
stop there, and is restored from it; a script that never checkpoints still fails clearly."""

from __future__ import annotations

from pathlib import Path

from pedl.local import smoke_test

TUTORIAL = """\
import logging
import pathlib

import determined as det


def save_state(x, steps_completed, trial_id, checkpoint_directory):
    with checkpoint_directory.joinpath("state").open("w") as f:
        f.write(f"{x},{steps_completed},{trial_id}")


def load_state(trial_id, checkpoint_directory):
    with pathlib.Path(checkpoint_directory).joinpath("state").open("r") as f:
        x, steps_completed, ckpt_trial_id = [int(field) for field in f.read().split(",")]
    return (x, steps_completed) if ckpt_trial_id == trial_id else (x, 0)


def main(core_context, latest_checkpoint, trial_id, increment_by):
    x = 0
    starting_batch = 0
    if latest_checkpoint is not None:
        with core_context.checkpoint.restore_path(latest_checkpoint) as path:
            x, starting_batch = load_state(trial_id, path)
        print(f"RESUMED at {starting_batch}")
    steps_completed = starting_batch
    for op in core_context.searcher.operations():
        for batch in range(starting_batch, op.length):
            steps_completed = batch + 1
            x += increment_by
            if steps_completed % 5 == 0:
                core_context.train.report_training_metrics(
                    steps_completed=steps_completed, metrics={"x": x}
                )
                op.report_progress(steps_completed)
                with core_context.checkpoint.store_path(
                    {"steps_completed": steps_completed}
                ) as (path, storage_id):
                    save_state(x, steps_completed, trial_id, path)
                if core_context.preempt.should_preempt():
                    print(f"PREEMPTED at {steps_completed}")
                    return
        core_context.train.report_validation_metrics(
            steps_completed=steps_completed, metrics={"x": x}
        )
        op.report_completed(x)


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format=det.LOG_FORMAT)
    info = det.get_cluster_info()
    with det.core.init() as core_context:
        main(
            core_context=core_context,
            latest_checkpoint=info.latest_checkpoint,
            trial_id=info.trial.trial_id,
            increment_by=info.trial.hparams["increment_by"],
        )
"""

CONFIG = """\
name: core-api-stage-3
entrypoint: python3 train.py
hyperparameters:
  increment_by: 1
searcher:
  name: single
  metric: x
  smaller_is_better: false
  max_length: 100000
max_restarts: 0
"""


def test_a_core_api_script_runs_until_its_first_checkpoint(tmp_path: Path, capfd: object) -> None:
    (tmp_path / "train.py").write_text(TUTORIAL)
    (tmp_path / "const.yaml").write_text(CONFIG)
    steps = smoke_test(tmp_path / "const.yaml", tmp_path)
    assert [(s.name, s.ok) for s in steps] == [
        ("load the experiment config", True),
        ("load the model definition", True),
        ("train until the script's first checkpoint", True),
        ("restore the checkpoint and train on", True),
    ], steps
    assert steps[2].detail == "checkpoint at batch 5"
    output = capfd.readouterr()  # type: ignore[attr-defined]
    text = output.out + output.err
    assert "PREEMPTED at 5" in text and "RESUMED at 5" in text
    assert "PREEMPTED at 10" not in text  # stopped at its first checkpoint, not its length
