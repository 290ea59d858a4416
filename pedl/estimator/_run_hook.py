"""``RunHook``: a training hook that also hears about checkpoints and the trial's end."""

from __future__ import annotations

from pedl.estimator._requirements import tf_estimator


class RunHook(tf_estimator.SessionRunHook):
    """A ``tf.estimator.SessionRunHook`` (give it in ``TrainSpec(hooks=[...])``) with three
    more calls from PEDL:

    - ``on_checkpoint_load(checkpoint_dir)``: the trial resumes from that checkpoint (a local
      directory, gone after the call), before training starts;
    - ``on_checkpoint_end(checkpoint_dir)``: a checkpoint was written to that directory (add
      files to it here; they become part of the checkpoint);
    - ``on_trial_close()``: the trial process is done with the trial.
    """

    def on_checkpoint_load(self, checkpoint_dir: str) -> None:
        pass

    def on_checkpoint_end(self, checkpoint_dir: str) -> None:
        pass

    def on_trial_close(self) -> None:
        pass
