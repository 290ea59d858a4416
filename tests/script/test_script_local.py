"""Simple model definitions (scripts that call ``model.fit``) through ``experiment create
--test`` and short local runs, in this process: a plain Keras script reading
hyperparameters (its local run is the reference of tests/master/test_script_tensorflow_e2e.py),
Determined 0.38's callback script, a ``module:function`` entrypoint."""

from __future__ import annotations

import textwrap
from pathlib import Path

import keras
import numpy as np
import pytest

import pedl
from pedl import core
from pedl.config import ExperimentConfig, load_config
from pedl.exec import run_attempt
from pedl.local import LocalExperiment, smoke_test
from pedl.model_def import unload
from pedl.script import DeterminedCallback, from_tf_config, get_cluster_info
from pedl.storage import SharedFSStorage
from pedl.vocabulary import CheckpointState, MetricKind, TrialError, TrialOutcome
from tests import local_record as record

HERE = Path(__file__).parent
FIT_MODEL = HERE / "fit_model"
CALLBACK_MODEL = HERE / "callback_model"

pytestmark = pytest.mark.slow


@pytest.fixture(autouse=True)
def _unload() -> None:
    unload()


def run_local(config: Path, model: Path, out: Path) -> Path:
    experiment = LocalExperiment.create(config, model, out)
    try:
        summary = experiment.run()
        assert summary.state == "COMPLETED", [t.error for t in summary.trials]
    finally:
        experiment.close()
    return experiment.directory


def checkpoints(directory: Path) -> list[int]:
    """The batches of every checkpoint the run took (kept, or deleted by retention)."""
    return sorted(
        record.checkpoint_batches(directory)
        + record.checkpoint_batches(directory, CheckpointState.DELETED)
    )


@pytest.mark.parametrize("model", [FIT_MODEL, CALLBACK_MODEL], ids=["fit", "determined"])
def test_smoke_test_passes(model: Path) -> None:
    steps = smoke_test(model / "const.yaml", model)
    assert [s.ok for s in steps] == [True] * 4, steps
    assert steps[1].detail == "ScriptTrial"


def test_determined_callback_script_local_run(tmp_path: Path) -> None:
    """checkpoint_epochs=1 with 96 records in batches of 16: a checkpoint every 6 batches;
    TensorBoard(core_context, ...) writes to the trial's TensorBoard directory."""
    directory = run_local(CALLBACK_MODEL / "const.yaml", CALLBACK_MODEL, tmp_path)
    (trial,) = record.trials(directory)
    rows = record.metric_rows(directory, trial.id, MetricKind.VALIDATION)
    assert [b for _, b, _ in rows] == [6, 12, 18]
    assert "val_categorical_accuracy" in rows[-1][2]
    assert checkpoints(directory) == [6, 12, 18]
    events = list((directory / "tensorboard" / f"trial_{trial.id}").rglob("events.out.tfevents.*"))
    assert events, "TensorBoard(core_context, ...) wrote no events to the trial's directory"


FUNCTION_MODEL = """
import keras
import numpy as np
import pedl


def main():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(64, 3)).astype("float32")
    y = (x[:, 0] > 0).astype("int32")
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2, activation="softmax")])
    model.compile("sgd", "sparse_categorical_crossentropy", metrics=["accuracy"])
    model.fit(x, y, batch_size=pedl.get_hyperparameter("batch"), validation_data=(x, y))
    raise SystemExit(0)  # like a script's sys.exit(0): the trial still completes
"""

FUNCTION_CONFIG = """
name: function-entrypoint
entrypoint: train:main
hyperparameters: {batch: 8}
searcher: {name: single, metric: val_accuracy, max_length: {batches: 4}}
scheduling_unit: 2
"""


def test_function_entrypoint_local_run(tmp_path: Path) -> None:
    model = tmp_path / "model"
    model.mkdir()
    (model / "train.py").write_text(FUNCTION_MODEL)
    (tmp_path / "const.yaml").write_text(FUNCTION_CONFIG)
    directory = run_local(tmp_path / "const.yaml", model, tmp_path / "out")
    (trial,) = record.trials(directory)
    assert [b for _, b, _ in record.metric_rows(directory, trial.id, MetricKind.TRAINING)] == [
        2,
        4,
    ]


EPOCHS_MODEL = """
import keras
import numpy as np

rng = np.random.default_rng(0)
x = rng.normal(size=(64, 3)).astype("float32")
y = (x[:, 0] > 0).astype("int32")
model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2, activation="softmax")])
model.compile("sgd", "sparse_categorical_crossentropy", metrics=["accuracy"])
history = model.fit(
    x, y, batch_size=8, epochs=3, validation_split=0.25, validation_freq=FREQUENCY
)
assert "loss" in history.history, history.history
"""

# Determined 0.38's form: no max_length (fit's epochs decide), no validation period.
EPOCHS_CONFIG = """
name: keras-epochs
entrypoint: python3 train.py
searcher: {name: single, metric: val_accuracy, smaller_is_better: false}
"""


@pytest.mark.parametrize(("frequency", "validated"), [(1, [6, 12, 18]), (2, [12, 18])])
def test_a_script_validates_every_epoch_as_keras_does(
    tmp_path: Path, frequency: int, validated: list[int]
) -> None:
    """48 training records in batches of 8: 6 batches an epoch, 3 epochs; validation every
    ``validation_freq`` epochs, and once more at the end where the last epoch is not one."""
    model = tmp_path / "model"
    model.mkdir()
    (model / "train.py").write_text(EPOCHS_MODEL.replace("FREQUENCY", str(frequency)))
    (tmp_path / "const.yaml").write_text(EPOCHS_CONFIG)
    directory = run_local(tmp_path / "const.yaml", model, tmp_path / "out")
    (trial,) = record.trials(directory)
    rows = record.metric_rows(directory, trial.id, MetricKind.VALIDATION)
    assert [b for _, b, _ in rows] == validated


def test_a_script_that_never_calls_fit_fails_the_smoke_test_clearly(tmp_path: Path) -> None:
    """It runs as a trial (Determined's Core API scripts train without fit()), but stores
    nothing the smoke test could restore."""
    (tmp_path / "train.py").write_text("print('no training here')\n")
    config = tmp_path / "const.yaml"
    config.write_text(FUNCTION_CONFIG.replace("train:main", "train.py"))
    steps = smoke_test(config, tmp_path)
    assert [s.ok for s in steps] == [True, True, False]
    assert "the trial stored no checkpoint: a script must call model.fit()" in steps[2].detail


def test_get_hyperparameter_outside_a_trial_says_so() -> None:
    with pytest.raises(RuntimeError, match=r"only available in a script that PEDL runs"):
        pedl.get_hyperparameter("learning_rate")


def test_run_attempt_reports_the_scripts_error_with_its_line(tmp_path: Path) -> None:
    error = _failed_attempt(
        tmp_path,
        textwrap.dedent(
            """
            import pedl
            rate = pedl.get_hyperparameter("no_such_name")
            """
        ),
    )
    assert error.type == "KeyError"
    assert "no hyperparameter 'no_such_name'" in error.message
    assert error.location == "train.py:3"


def _failed_attempt(tmp_path: Path, script: str) -> TrialError:
    """The error of ``script`` run as an attempt (``train.py`` in ``tmp_path``), which fails."""
    (tmp_path / "train.py").write_text(script)
    config = tmp_path / "const.yaml"
    config.write_text(FUNCTION_CONFIG.replace("train:main", "train.py"))
    parsed = load_config(config)

    def context() -> core.Context:
        return core.detached_context(parsed, hparams={"batch": 8}, code_dir=tmp_path)

    result = run_attempt(tmp_path, "train.py", context)
    assert result.outcome is TrialOutcome.ERRORED
    assert result.error is not None
    return result.error


OTHER_KERAS_SCRIPT = """
import numpy as np
import tf_keras

x = np.zeros((16, 3), dtype="float32")
model = tf_keras.Sequential([tf_keras.Input((3,)), tf_keras.layers.Dense(1)])
model.compile("sgd", "mse")
model.fit(x, x[:, :1], batch_size=8)
open("trained_unseen.txt", "w").close()
"""


def test_a_script_fitting_the_other_keras_fails_at_its_fit_call(tmp_path: Path) -> None:
    """On Keras 3, a model of Keras 2 (``tf_keras``) would train unseen by PEDL: its fit()
    fails with what to change, at the script's line (Keras 2 mode refuses Keras 3's alike)."""
    error = _failed_attempt(tmp_path, OTHER_KERAS_SCRIPT)
    assert error.type == "ScriptError"
    assert "it is a Keras 2 object (`tf_keras`) and this trial runs on Keras 3" in error.message
    assert error.location == "train.py:8"
    assert not (tmp_path / "trained_unseen.txt").exists()
    import tf_keras

    assert "pedl" not in tf_keras.Model.fit.__module__  # restored once the script ended


PREEMPTED_SCRIPT = """
import keras
import numpy as np

x = np.random.default_rng(0).normal(size=(64, 3)).astype("float32")
y = (x[:, 0] > 0).astype("int32")
model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2, activation="softmax")])
model.compile("sgd", "sparse_categorical_crossentropy", metrics=["accuracy"])
model.fit(x, y, batch_size=8, validation_data=(x, y))
open("after_fit.txt", "w").close()
"""


def test_a_preempted_script_checkpoints_and_stops_at_its_fit_call(tmp_path: Path) -> None:
    """Pause/preemption: fit() checkpoints at the chunk boundary and the rest of the script
    does not run; the trial's outcome is PREEMPTED."""
    (tmp_path / "train.py").write_text(PREEMPTED_SCRIPT)
    config = load_config_text(FUNCTION_CONFIG.replace("train:main", "train.py"), tmp_path)
    asked = []

    def should_preempt() -> bool:
        asked.append(True)
        return len(asked) > 1  # at the first chunk boundary

    recorder = core.MemoryBackend([4], preempt=should_preempt)

    def context() -> core.Context:
        info = core.TrialInfo(
            trial_id=1,
            experiment_id=1,
            hparams={"batch": 8},
            trial_seed=3,
            config=config,
            code_dir=tmp_path,
        )
        return core.build_context(
            info,
            backend=recorder,
            storage=SharedFSStorage(tmp_path / "checkpoints"),
        )

    result = run_attempt(tmp_path, "train.py", context)
    assert result.outcome is TrialOutcome.PREEMPTED, result.error
    assert [batches for _, batches in recorder.checkpoints] == [2]
    assert not (tmp_path / "after_fit.txt").exists()
    assert pedl.core.active_context() is None  # the script's run left no trial context behind


def load_config_text(text: str, directory: Path) -> ExperimentConfig:
    path = directory / "const.yaml"
    path.write_text(text)
    return load_config(path)


def test_outside_pedl_a_038_script_trains_as_plain_keras() -> None:
    """Run by hand, Determined 0.38's pieces step aside: no cluster info, a detached core
    context, a DeterminedCallback that does nothing, fit() as plain Keras."""
    assert get_cluster_info() is None
    distributed, strategy = from_tf_config()
    with pedl.core.init(distributed=distributed) as core_context:
        assert core_context.distributed is distributed
        assert not core_context.preempt.should_preempt()
        with strategy.scope():
            model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
            model.compile("sgd", "mse")
        callback = DeterminedCallback(core_context, checkpoint=None, continue_id="local")
        x = np.ones((8, 3), "float32")
        history = model.fit(x, x[:, :1], epochs=2, callbacks=[callback], verbose=0)
    assert len(history.history["loss"]) == 2
    with pytest.raises(TypeError, match="needs the core context"):
        DeterminedCallback(object(), checkpoint=None, continue_id=1)  # type: ignore[arg-type]
