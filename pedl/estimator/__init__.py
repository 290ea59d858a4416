"""Train ``tf.estimator`` models with PEDL: the EstimatorTrial API.

``tf.estimator`` is gone from TensorFlow 2.16 on: this package runs with TensorFlow 2.15 and
tensorflow-estimator 2.15 (the ``pedl[estimator]`` extra, in an environment of its own). Where
they are missing, importing it raises :class:`EstimatorUnavailableError`, whose message says
what to install and how to point an experiment at that environment.
"""

from pedl.estimator._context import (
    EstimatorExperimentalContext,
    EstimatorTrialContext,
    ServingInputReceiverFn,
)
from pedl.estimator._controller import EstimatorTrialController, TrialError
from pedl.estimator._load import load_estimator_from_checkpoint_path
from pedl.estimator._metric_reducer import MetricReducer
from pedl.estimator._requirements import (
    ESTIMATOR_REQUIREMENTS,
    EstimatorUnavailableError,
    load_estimator,
)
from pedl.estimator._run_hook import RunHook
from pedl.estimator._trial import EstimatorTrial

__all__ = [
    "ESTIMATOR_REQUIREMENTS",
    "EstimatorExperimentalContext",
    "EstimatorTrial",
    "EstimatorTrialContext",
    "EstimatorTrialController",
    "EstimatorUnavailableError",
    "MetricReducer",
    "RunHook",
    "ServingInputReceiverFn",
    "TrialError",
    "load_estimator",
    "load_estimator_from_checkpoint_path",
]
