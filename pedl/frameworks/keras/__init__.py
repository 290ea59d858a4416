"""``pedl.frameworks.keras``: the PEDL 0.x tf.keras API."""

from pedl.frameworks.keras._adapter import wrap_dataset
from pedl.frameworks.keras.tf_keras_trial import TFKerasTrial
from pedl.keras import KerasDataAdapter, SequenceAdapter

__all__ = ["KerasDataAdapter", "SequenceAdapter", "TFKerasTrial", "wrap_dataset"]
