"""``determined.pytorch`` is not part of PEDL, which trains TensorFlow and Keras models."""

from determined._unsupported import UnsupportedFeatureError

raise UnsupportedFeatureError(
    "determined.pytorch (PyTorchTrial)",
    "PEDL trains TensorFlow and Keras models only: port the model to Keras "
    "(pedl.keras.TFKerasTrial), or keep it on a Determined cluster",
)
