"""A script that calls ``model.fit`` several times (keras.io's fine-tuning: train the head,
unfreeze, recompile with a lower learning rate, ``fit`` again), run in local mode: each call a
stage of the one trial. Its metrics and checkpoints count on across the stages; a History per
call holds every epoch; preempted (SIGTERM, as ``pedl experiment create --local`` is stopped)
in either stage and resumed, the earlier stages' calls return at once with their state and
History, the preempted stage resumes from its checkpoint, and the final weights equal an
uninterrupted run's bitwise; the script's code after its last ``fit`` runs on the trained
model."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import numpy as np
import pytest

from pedl.local import LocalExperiment
from pedl.model_def import unload
from pedl.vocabulary import CheckpointState, MetricKind
from tests import local_record as record

pytestmark = pytest.mark.slow

# 96 training records in batches of 16: 6 batches an epoch; the head trains 2 epochs (12
# batches), the whole model 3 more (18). A callback sends SIGTERM once, at the batch a file
# names (stage and batch of this process's run of it): local mode's preemption.
FINE_TUNE = textwrap.dedent(
    """
    import json
    import os
    import signal

    import keras
    import numpy as np

    rng = np.random.default_rng(0)
    x = rng.normal(size=(128, 4)).astype("float32")
    y = (x[:, 0] + x[:, 1] > 0).astype("int32")
    x_train, y_train, x_val, y_val = x[:96], y[:96], x[96:], y[96:]


    class PreemptOnce(keras.callbacks.Callback):
        def __init__(self, stage):
            super().__init__()
            self.stage = stage
            self.seen = 0

        def on_train_batch_end(self, batch, logs=None):
            self.seen += 1
            path = os.environ.get("PREEMPT_AT", "")
            if path and os.path.exists(path):
                with open(path) as f:
                    stage, at = f.read().split()
                if int(stage) == self.stage and int(at) == self.seen:
                    os.remove(path)
                    os.kill(os.getpid(), signal.SIGTERM)


    base = keras.Sequential(
        [keras.Input((4,)), keras.layers.Dense(8, activation="relu")], name="base"
    )
    model = keras.Sequential(
        [base, keras.layers.Dropout(0.3), keras.layers.Dense(2, activation="softmax")]
    )
    base.trainable = False
    loss = "sparse_categorical_crossentropy"
    model.compile(keras.optimizers.Adam(0.01), loss, metrics=["accuracy"])
    out = os.environ["SCRIPT_OUT"]
    with open(os.path.join(out, "calls.txt"), "a") as f:
        f.write("fit 1\\n")
    head = model.fit(
        x_train, y_train, batch_size=16, epochs=2, validation_data=(x_val, y_val),
        callbacks=[PreemptOnce(1)],
    )
    # Between the fits, the script's own code: unfreeze, a random draw, recompile.
    noise = float(np.random.uniform())
    base.trainable = True
    model.compile(keras.optimizers.Adam(1e-3), loss, metrics=["accuracy"])
    with open(os.path.join(out, "calls.txt"), "a") as f:
        f.write("fit 2\\n")
    tuned = model.fit(
        x_train, y_train, batch_size=16, epochs=3, validation_data=(x_val, y_val),
        callbacks=[PreemptOnce(2)],
    )
    # After the last fit: the trained model.
    np.savez(os.path.join(out, "weights.npz"), *model.get_weights())
    with open(os.path.join(out, "after.json"), "w") as f:
        json.dump(
            {
                "head": head.history,
                "tuned": tuned.history,
                "noise": noise,
                "evaluate": model.evaluate(x_val, y_val, verbose=0, return_dict=True),
            },
            f,
        )
    """
)

CONFIG = """
name: fine-tune
entrypoint: python3 train.py
searcher: {name: single, metric: val_accuracy, smaller_is_better: false}
checkpoint_policy: none
reproducibility: {experiment_seed: 7}
"""


@pytest.fixture(autouse=True)
def _unload() -> None:
    unload()


def run(
    tmp_path: Path,
    name: str,
    monkeypatch: pytest.MonkeyPatch,
    *,
    preempt: str | None = None,
    config: str = CONFIG,
) -> tuple[Path, dict]:
    """Run the script in local mode (resumed after the preemption, if any); return the run's
    directory and what the script wrote after its last fit."""
    base = tmp_path / name
    model = base / "model"
    model.mkdir(parents=True)
    (model / "train.py").write_text(FINE_TUNE)
    (base / "const.yaml").write_text(config)
    out = base / "out"
    out.mkdir()
    monkeypatch.setenv("SCRIPT_OUT", str(out))
    marker = base / "preempt_at.txt"
    if preempt is not None:
        marker.write_text(preempt)
    monkeypatch.setenv("PREEMPT_AT", str(marker))
    experiment = LocalExperiment.create(base / "const.yaml", model, base / "runs")
    directory = experiment.directory
    try:
        summary = experiment.run()
    finally:
        experiment.close()
    if preempt is not None:
        assert summary.state == "PAUSED", [t.error for t in summary.trials]
        assert not marker.exists()
        assert not (out / "after.json").exists()  # the rest of the script did not run
        unload()
        experiment = LocalExperiment(directory)
        try:
            summary = experiment.run()
        finally:
            experiment.close()
    assert summary.state == "COMPLETED", [t.error for t in summary.trials]
    after = json.loads((out / "after.json").read_text())
    after["weights"] = [a for _, a in sorted(np.load(out / "weights.npz").items())]
    after["calls"] = (out / "calls.txt").read_text().split("\n")[:-1]
    return directory, after


def checkpoints(directory: Path) -> list[int]:
    return sorted(
        record.checkpoint_batches(directory)
        + record.checkpoint_batches(directory, CheckpointState.DELETED)
    )


def stages(directory: Path) -> dict[int, int]:
    """The stage of each checkpoint kept, by its batches in the trial."""
    found = {}
    for path in directory.rglob("metadata.json"):
        metadata = json.loads(path.read_text())
        found[metadata["steps_completed"]] = metadata["script_stage"]
    return found


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    with pytest.MonkeyPatch.context() as monkeypatch:
        return run(tmp_path_factory.mktemp("uninterrupted"), "plain", monkeypatch)


def test_a_two_stage_fine_tune_completes_and_counts_on(uninterrupted: tuple[Path, dict]) -> None:
    """One trial: training and validation metrics every epoch at the trial's batches 6..30
    and its epochs 1..5 (the second fit's epochs after the first's); a checkpoint at each
    stage's end, the second marked stage 2; each History one value per epoch; the code after
    the last fit ran."""
    directory, after = uninterrupted
    (trial,) = record.trials(directory)
    every_epoch = [6, 12, 18, 24, 30]
    training = record.metric_rows(directory, trial.id, MetricKind.TRAINING)
    validation = record.metric_rows(directory, trial.id, MetricKind.VALIDATION)
    assert [b for _, b, _ in training] == every_epoch
    assert [b for _, b, _ in validation] == every_epoch
    # Each row carries the trial's epochs: the fine-tune's count on after the head's.
    for kind in (MetricKind.TRAINING, MetricKind.VALIDATION):
        assert record.metric_epochs(directory, trial.id, kind) == [
            (6, 1.0),
            (12, 2.0),
            (18, 3.0),
            (24, 4.0),
            (30, 5.0),
        ]
    assert checkpoints(directory) == [12, 30]
    assert stages(directory) == {30: 2}  # the first stage's, at 12, went with retention
    assert after["calls"] == ["fit 1", "fit 2"]
    head, tuned = after["head"], after["tuned"]
    assert set(head) == {"loss", "accuracy", "val_loss", "val_accuracy"}
    assert [len(v) for v in head.values()] == [2, 2, 2, 2]
    assert [len(v) for v in tuned.values()] == [3, 3, 3, 3]
    assert tuned["val_loss"] == [m["val_loss"] for _, b, m in validation if b > 12]
    assert head["loss"] == [m["loss"] for _, b, m in training if b <= 12]
    # The code after the last fit sees the trained model: its evaluation is the last one's.
    assert after["evaluate"]["loss"] == pytest.approx(tuned["val_loss"][-1], rel=1e-5)


@pytest.mark.parametrize(
    ("preempt", "checkpointed", "calls"),
    [
        ("2 2", [12, 18, 30], ["fit 1", "fit 2", "fit 1", "fit 2"]),
        ("1 2", [6, 12, 30], ["fit 1", "fit 1", "fit 2"]),
    ],
    ids=["in-stage-2", "in-stage-1"],
)
def test_preempted_and_resumed_it_ends_as_the_uninterrupted_run(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    uninterrupted: tuple[Path, dict],
    preempt: str,
    checkpointed: list[int],
    calls: list[str],
) -> None:
    """SIGTERM after the second batch of a stage: a checkpoint at the next epoch's end, the
    run paused; resumed, the final weights, the draw between the fits and both Histories
    equal the uninterrupted run's, and the metrics rows too."""
    directory, after = run(tmp_path, "preempted", monkeypatch, preempt=preempt)
    plain_directory, plain = uninterrupted
    assert checkpoints(directory) == checkpointed
    assert after["calls"] == calls
    assert len(after["weights"]) == len(plain["weights"])
    for resumed, reference in zip(after["weights"], plain["weights"], strict=True):
        np.testing.assert_array_equal(resumed, reference)
    assert after["noise"] == plain["noise"]
    assert after["head"] == plain["head"]
    assert after["tuned"] == plain["tuned"]
    (trial,) = record.trials(directory)
    (plain_trial,) = record.trials(plain_directory)
    for kind in (MetricKind.TRAINING, MetricKind.VALIDATION):
        assert record.metric_rows(directory, trial.id, kind) == record.metric_rows(
            plain_directory, plain_trial.id, kind
        )
        assert record.metric_epochs(directory, trial.id, kind) == record.metric_epochs(
            plain_directory, plain_trial.id, kind
        )


def bounded(batches: int) -> str:
    return CONFIG.replace(
        "smaller_is_better: false}",
        f"smaller_is_better: false, max_length: {{batches: {batches}}}}}",
    )


@pytest.mark.parametrize(
    ("max_length", "validated", "tuned_epochs"),
    [(24, [6, 12, 18, 24], 2), (10, [6, 10], 0)],
    ids=["within-stage-2", "within-stage-1"],
)
def test_max_length_bounds_the_trial_across_its_stages(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    max_length: int,
    validated: list[int],
    tuned_epochs: int,
) -> None:
    """max_length of 24 batches: the head's 2 epochs (12), then 2 of the fine-tune's own 3
    epochs, what remains. Of 10: the head trains 10 batches (a last partial epoch), and the
    fine-tune's fit returns at once, an empty History. The trial completes either way, and the
    code after the last fit runs."""
    directory, after = run(tmp_path, "bounded", monkeypatch, config=bounded(max_length))
    (trial,) = record.trials(directory)
    rows = record.metric_rows(directory, trial.id, MetricKind.VALIDATION)
    assert [b for _, b, _ in rows] == validated
    epochs = record.metric_epochs(directory, trial.id, MetricKind.VALIDATION)
    assert [e for _, e in epochs] == [b / 6 for b in validated]
    assert [len(v) for v in after["head"].values()] == [2, 2, 2, 2]
    assert [len(v) for v in after["tuned"].values()] == [tuned_epochs] * len(after["tuned"])
    assert len(after["tuned"]) == (4 if tuned_epochs else 0)
