"""``determined``, mapped onto PEDL (the ``pedl-determined`` distribution, ``compat/determined``).

Model definitions written against Determined's TF-Keras API (2020 to 0.38) import
``determined``, ``determined.keras``, ``determined.core``, ``determined.experimental``: with
this package installed they run on PEDL unchanged. The names are PEDL's own objects
(``determined.keras.TFKerasTrial is pedl.keras.TFKerasTrial``). A Determined feature PEDL does
not provide raises :class:`UnsupportedFeatureError` naming the PEDL alternative.

Importing ``determined`` does not import TensorFlow; ``determined.keras`` does.
"""

from __future__ import annotations

from typing import Any

from determined import errors
from determined._unsupported import UnsupportedFeatureError, module_getattr
from pedl import InvalidHP, Trial, TrialController

__version__ = "0.38.1+pedl.0.1.0"
"""The Determined API version this package follows, and PEDL's version."""

LOG_FORMAT = "%(levelname)s: [%(process)s] %(name)s: %(message)s"

_SUBMODULES = ("core", "estimator", "experimental", "keras", "launch", "pytorch", "tensorflow")

__all__ = [
    "LOG_FORMAT",
    "EnvContext",
    "ExperimentConfig",
    "InvalidHP",
    "Trial",
    "TrialContext",
    "TrialController",
    "UnsupportedFeatureError",
    "__version__",
    "errors",
    "get_cluster_info",
]

_getattr = module_getattr(
    "determined",
    forwards={
        "TrialContext": "pedl.keras:TFKerasTrialContext",
        "EnvContext": "pedl.keras:EnvContext",
        "ExperimentConfig": "pedl.keras:ExperimentConfigDict",
        "get_cluster_info": "pedl.script:get_cluster_info",
        **{name: f"determined.{name}" for name in _SUBMODULES},
    },
    unsupported={
        "NativeContext": "The Native API left Determined in 0.15: write a TFKerasTrial, or a "
        "script that calls model.fit() (entrypoint: train.py)",
        "horovod": "PEDL distributes training with tf.distribute "
        "(MultiWorkerMirroredStrategy): set resources.slots_per_trial",
        "profiler": "Profile with TensorBoard's profiler (keras.callbacks.TensorBoard("
        "profile_batch=...)) in keras_callbacks()",
        "deepspeed": "PEDL trains TensorFlow and Keras models only",
        "transformers": "PEDL trains TensorFlow and Keras models only",
        "import_from_path": "Import your modules normally: the model definition's directory "
        "is on sys.path",
        "DefaultLaunchLayer": "PEDL launches trials itself",
    },
)


def __getattr__(name: str) -> Any:
    return _getattr(name)
