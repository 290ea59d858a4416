"""The ``determined`` compatibility package: PEDL's objects under Determined's names, a clear
error for what PEDL does not provide, and a light ``import determined``."""

from __future__ import annotations

import importlib
import subprocess
import sys

import determined
import determined.core
import determined.experimental
import determined.keras
import determined.keras.callbacks
import pytest
from determined import UnsupportedFeatureError
from determined.experimental import client

import pedl
import pedl.core
import pedl.keras
import pedl.script
from tests.waits import scaled


def test_names_are_pedls_own_objects() -> None:
    dk = determined.keras
    assert dk.TFKerasTrial is pedl.keras.TFKerasTrial
    assert dk.TFKerasTrialContext is pedl.keras.TFKerasTrialContext
    assert dk.TFKerasContext is pedl.keras.TFKerasTrialContext
    assert dk.InMemorySequence is pedl.keras.InMemorySequence
    assert dk.ArrayLikeAdapter is pedl.keras.ArrayLikeAdapter
    assert dk.SequenceAdapter is pedl.keras.SequenceAdapter
    assert dk.KerasDataAdapter is pedl.keras.KerasDataAdapter
    assert dk.InputData is pedl.keras.InputData
    assert dk.TFKerasTensorBoard is pedl.keras.TFKerasTensorBoard
    assert dk.load_model_from_checkpoint_path is pedl.keras.load_model_from_checkpoint_path
    assert dk.callbacks.EarlyStopping is pedl.keras.callbacks.EarlyStopping
    assert dk.callbacks.Callback is pedl.keras.callbacks.Callback
    assert determined.InvalidHP is pedl.InvalidHP is determined.errors.InvalidHP
    assert determined.TrialContext is pedl.keras.TFKerasTrialContext
    assert determined.ExperimentConfig is pedl.keras.ExperimentConfigDict
    # 0.38's from_tf_config() lives with the script code, on pedl.core's context.
    assert determined.core.DistributedContext is pedl.script.DistributedContext
    assert issubclass(determined.core.DistributedContext, pedl.core.DistributedContext)
    assert determined.core.init is pedl.core.init
    assert determined.experimental.client is client
    assert client.Determined is pedl.client.Client


def test_submodules_reachable_from_the_top_package() -> None:
    assert determined.keras is importlib.import_module("determined.keras")
    assert determined.core is importlib.import_module("determined.core")


def test_lazy_forwards_to_the_script_estimator_and_tensorflow_apis() -> None:
    import pedl.script

    assert determined.keras.DeterminedCallback is pedl.script.DeterminedCallback
    assert determined.get_cluster_info is pedl.script.get_cluster_info
    try:
        expected = importlib.import_module("pedl.estimator").EstimatorTrial
    except ImportError:  # no TensorFlow 2.15 here: the message says what to install
        with pytest.raises(ImportError, match=r"tf\.estimator"):
            _ = determined.estimator.EstimatorTrial
    else:
        assert determined.estimator.EstimatorTrial is expected
    homes = [importlib.import_module(m) for m in ("pedl.tensorflow", "pedl.frameworks.tensorflow")]
    trials = [m.TensorFlowTrial for m in homes if hasattr(m, "TensorFlowTrial")]
    if trials:
        assert determined.tensorflow.TensorFlowTrial is trials[0]
    else:
        with pytest.raises(UnsupportedFeatureError, match="TensorFlowTrial"):
            _ = determined.tensorflow.TensorFlowTrial
    assert determined.keras.TensorBoard is pedl.script.TensorBoard  # 0.38's (core_context, ...)
    assert determined.tensorflow.load_model is pedl.keras.load_model_from_checkpoint_path


@pytest.mark.parametrize(
    ("module", "name", "alternative"),
    [
        (determined.keras, "init", "TFKerasTrial"),
        (determined.keras, "TFKerasNativeContext", "TFKerasTrial"),
        (determined, "horovod", "slots_per_trial"),
        (determined, "NativeContext", "model.fit"),
        (determined.experimental, "create", "pedl experiment create"),
        (determined.experimental, "ModelRegistry", "register_version"),
        (determined.core, "ProfilerContext", "TensorBoard"),
    ],
)
def test_out_of_scope_features_name_the_pedl_alternative(
    module: object, name: str, alternative: str
) -> None:
    with pytest.raises(UnsupportedFeatureError) as raised:
        getattr(module, name)
    message = str(raised.value)
    assert f".{name} is a Determined feature that PEDL does not provide" in message
    assert alternative in message
    assert not isinstance(raised.value, AttributeError)


def test_pytorch_import_fails_with_the_reason() -> None:
    sys.modules.pop("determined.pytorch", None)
    with pytest.raises(UnsupportedFeatureError, match="TensorFlow and Keras models only"):
        importlib.import_module("determined.pytorch")


def test_unknown_names_are_attribute_errors_that_point_to_the_guide() -> None:
    with pytest.raises(AttributeError, match="migrating-from-determined"):
        _ = determined.keras.NoSuchThing
    assert not hasattr(determined, "__wrapped__")


def test_importing_determined_does_not_import_tensorflow() -> None:
    code = "import sys, determined, determined.core; print('tensorflow' in sys.modules)"
    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=scaled(120),
        check=True,
    )
    assert result.stdout.strip() == "False"
