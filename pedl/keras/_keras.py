"""The Keras that PEDL's tf.keras API trains with: the ``tf.keras`` TensorFlow makes active.

TensorFlow's ``tf.keras`` is Keras 3 (the ``keras`` package) unless ``TF_USE_LEGACY_KERAS`` is
set, when it is Keras 2 (the ``tf-keras`` package, ``tf_keras``): Keras 2 mode, the Keras
that Determined's TF-Keras code was written for. Every module of the trial's code path takes
``keras`` from here, so a trial's model, PEDL's controller, callbacks and data adapters are
all of one Keras. The few calls that differ between the two are the functions below.

Type checkers see Keras 3; at run time ``keras`` is whichever is active.
"""

from __future__ import annotations

import logging
import os
from typing import TYPE_CHECKING, Any

import tensorflow as tf

from pedl.config._environment import KERAS2_IMAGE_VARIABLE

LEGACY_KERAS_VARIABLE = "TF_USE_LEGACY_KERAS"


def legacy_keras(environ: Any = None) -> bool:
    """Whether ``tf.keras`` is Keras 2 in a process with this environment: TensorFlow's own
    test of ``TF_USE_LEGACY_KERAS``."""
    value = (os.environ if environ is None else environ).get(LEGACY_KERAS_VARIABLE)
    return value in ("true", "True", "1")


LEGACY: bool = legacy_keras()
"""True in Keras 2 mode (``tf.keras`` is ``tf_keras``)."""

if TYPE_CHECKING:
    import keras
elif LEGACY:
    import tf_keras as keras
else:
    import keras

KERAS_VERSION = f"{keras.__version__} (Keras 2, tf-keras)" if LEGACY else keras.__version__

PyDataset: Any = keras.utils.Sequence if LEGACY else keras.utils.PyDataset
"""The base class of a Keras Sequence: ``keras.utils.PyDataset`` (Keras 3), whose instances
carry their loading options, or ``tf.keras.utils.Sequence`` (Keras 2)."""

OPTIMIZER_TYPES: tuple[type, ...] = (
    (keras.optimizers.Optimizer, keras.optimizers.legacy.Optimizer)
    if LEGACY
    else (keras.optimizers.Optimizer,)
)
"""The optimizer classes of the active Keras (Keras 2's ``optimizers.legacy`` ones too)."""

flatten: Any = tf.nest.flatten if LEGACY else keras.tree.flatten
map_structure: Any = tf.nest.map_structure if LEGACY else keras.tree.map_structure


def variable_path(variable: Any) -> str:
    """The variable's name within its model: Keras 3's ``path``, Keras 2's ``name``."""
    return str(variable.name if LEGACY else variable.path)


def variable_value(variable: Any) -> Any:
    """The ``tf.Variable`` that holds a Keras variable's value (Keras 2's is one)."""
    return variable if LEGACY else variable.value


def is_compiled(model: Any) -> bool:
    return bool(model._is_compiled if LEGACY else model.compiled)


def optimizer_variables(optimizer: Any) -> list[Any]:
    """The optimizer's state: iterations and slots (a Keras 2 legacy optimizer's
    ``variables()`` is a method)."""
    variables = optimizer.variables
    return list(variables() if callable(variables) else variables)


def build_optimizer(optimizer: Any, variables: list[Any]) -> None:
    """Create the optimizer's slot variables for ``variables`` before the first step."""
    if hasattr(optimizer, "_create_all_weights"):  # a Keras 2 legacy optimizer
        optimizer._create_all_weights(variables)
    elif LEGACY:
        if not getattr(optimizer, "_built", False):
            optimizer.build(variables)
    elif not optimizer.built:
        optimizer.build(variables)


def set_random_seed(seed: int) -> None:
    """Seed Python, NumPy and TensorFlow. In Keras 2 mode, random layers (dropout, noise)
    then draw from ``tf.random.Generator`` state (see :func:`seed_generator_states`), which a
    checkpoint can hold, rather than from TensorFlow's legacy stateful random ops, which it
    cannot."""
    use_checkpointable_rng()
    keras.utils.set_random_seed(seed)


def use_checkpointable_rng() -> None:
    """In Keras 2 mode, make random layers built from now on draw from ``tf.random.Generator``
    state (see :func:`set_random_seed`); nothing on Keras 3, whose layers always do."""
    if LEGACY:
        keras.backend.experimental.enable_tf_random_generator()


def mode_mismatch(keras_version: Any) -> str | None:
    """Why a checkpoint written with ``keras_version`` (its metadata's) cannot be restored in
    this process's Keras, or None when the Keras versions match."""
    written_legacy = "Keras 2" in str(keras_version or "")
    if written_legacy == LEGACY:
        return None
    if written_legacy:
        return (
            "the checkpoint was written in Keras 2 mode (TF_USE_LEGACY_KERAS=1) and this "
            "process runs Keras 3: set TF_USE_LEGACY_KERAS=1 to restore it"
        )
    return (
        "the checkpoint was written on Keras 3 and this process runs Keras 2 "
        "(TF_USE_LEGACY_KERAS=1): unset TF_USE_LEGACY_KERAS to restore it"
    )


def other_keras(obj: Any) -> str | None:
    """Why ``obj`` (a model, an optimizer) cannot train here because it comes from the other
    Keras (a Keras 3 ``keras`` object in Keras 2 mode, or a ``tf_keras`` one on Keras 3), or
    None. Judged by its class and the classes it derives from: a model class of the user's own
    comes from the package its base class does."""
    packages = {cls.__module__.split(".", 1)[0] for cls in type(obj).__mro__}
    if LEGACY and "keras" in packages:
        return (
            "it is a Keras 3 object (`import keras`) and this trial runs in Keras 2 mode "
            f"({LEGACY_KERAS_VARIABLE}=1): build it with `tf.keras` (or `tf_keras`), or unset "
            f"{LEGACY_KERAS_VARIABLE}"
        )
    if not LEGACY and "tf_keras" in packages:
        return (
            "it is a Keras 2 object (`tf_keras`) and this trial runs on Keras 3: set "
            f"{LEGACY_KERAS_VARIABLE}=1 in environment.environment_variables, or build it "
            "with `keras`"
        )
    return None


def seed_generator_states(model: Any) -> list[Any]:
    """The state variables of a Keras 2 model's random layers' generators, which Keras 2
    keeps out of ``model.variables`` (Keras 3's ``model.variables`` holds them)."""
    if not LEGACY:
        return []
    states = []
    for layer in model._flatten_layers(include_self=False):
        generator = getattr(getattr(layer, "_random_generator", None), "_generator", None)
        if isinstance(generator, tf.random.Generator):
            states.append(generator.state)
    return states


_announced = False


def announce_mode() -> None:
    """Say once in the trial's log that it runs in Keras 2 mode because its
    ``environment.image`` is one of Determined's TensorFlow images (the master then sets
    :data:`~pedl.config.KERAS2_IMAGE_VARIABLE`)."""
    global _announced
    image = os.environ.get(KERAS2_IMAGE_VARIABLE)
    if _announced or not image or not LEGACY:
        return
    _announced = True
    logging.getLogger("pedl.keras").info(
        "Keras 2 mode (TF_USE_LEGACY_KERAS=1): environment.image %s is one of Determined's "
        "TensorFlow images, whose tf.keras was Keras 2; set TF_USE_LEGACY_KERAS=0 in "
        "environment_variables to run on Keras 3",
        image,
    )


def clear_session() -> None:
    """Reset Keras' global state (layer names) without a ``gc.collect()``."""
    if LEGACY:
        keras.backend.clear_session()
    else:
        keras.backend.clear_session(free_memory=False)


__all__ = [
    "KERAS_VERSION",
    "LEGACY",
    "LEGACY_KERAS_VARIABLE",
    "OPTIMIZER_TYPES",
    "PyDataset",
    "announce_mode",
    "build_optimizer",
    "clear_session",
    "flatten",
    "is_compiled",
    "keras",
    "legacy_keras",
    "map_structure",
    "mode_mismatch",
    "optimizer_variables",
    "seed_generator_states",
    "set_random_seed",
    "use_checkpointable_rng",
    "variable_path",
    "variable_value",
]
