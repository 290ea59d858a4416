"""A framework-free training loop written as Determined 0.38's Core API documentation shows
(no TensorFlow): hyperparameters and the latest checkpoint from ``det.get_cluster_info()``,
metrics with ``steps_completed``, checkpoints with ``store_path``/``restore_path``,
``should_preempt()`` after each checkpoint. The script decides its length (``--steps``).

``PEDL_TEST_STEP_DELAY`` (seconds) slows each step; with ``PEDL_TEST_HOLD_FOR_PAUSE=1`` a fresh
run waits after its first checkpoint until it is asked to stop, so that a test can pause it
mid-run however slow the machine."""

import argparse
import logging
import os
import pathlib
import time

import determined as det


def save_state(x, steps_completed, trial_id, path):
    path.joinpath("state").write_text(f"{x},{steps_completed},{trial_id}")


def load_state(trial_id, path):
    x, steps_completed, ckpt_trial_id = (
        int(part) for part in pathlib.Path(path).joinpath("state").read_text().split(",")
    )
    return (x, steps_completed) if ckpt_trial_id == trial_id else (x, 0)


def hold_for_pause(core_context):
    """Waits, every worker in step, until the trial is asked to stop (``should_preempt()``)."""
    deadline = time.monotonic() + 600
    while not core_context.preempt.should_preempt() and time.monotonic() < deadline:
        time.sleep(0.05)


def main(core_context, latest_checkpoint, trial_id, increment_by, max_length):
    x, starting_batch = 0, 0
    if latest_checkpoint is not None:
        with core_context.checkpoint.restore_path(latest_checkpoint) as path:
            x, starting_batch = load_state(trial_id, path)
        logging.info("resumed at batch %d (x=%d)", starting_batch, x)
    delay = float(os.environ.get("PEDL_TEST_STEP_DELAY", "0"))
    hold = os.environ.get("PEDL_TEST_HOLD_FOR_PAUSE") == "1"
    for batch in range(starting_batch, max_length):
        x += increment_by
        steps_completed = batch + 1
        time.sleep(delay)
        if steps_completed % 10 == 0:
            core_context.train.report_training_metrics(
                steps_completed=steps_completed, metrics={"x": x}
            )
            core_context.train.report_progress(steps_completed / float(max_length))
            core_context.train.report_validation_metrics(
                steps_completed=steps_completed, metrics={"x": x, "batches": steps_completed}
            )
            with core_context.checkpoint.store_path({"steps_completed": steps_completed}) as (
                path,
                _uuid,
            ):
                save_state(x, steps_completed, trial_id, path)
            if hold and latest_checkpoint is None and steps_completed == 10:
                hold_for_pause(core_context)
            if core_context.preempt.should_preempt():
                return


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format=det.LOG_FORMAT)
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=100)
    args = parser.parse_args()
    info = det.get_cluster_info()
    assert info is not None, "this example only runs on-cluster"
    with det.core.init() as core_context:
        main(
            core_context=core_context,
            latest_checkpoint=info.latest_checkpoint,
            trial_id=info.trial.trial_id,
            increment_by=info.trial.hparams["increment_by"],
            max_length=args.steps,
        )
