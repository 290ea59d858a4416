"""Keras callbacks that understand PEDL's chunks, validations and checkpoints."""

from pedl.keras.callbacks._callback import Callback
from pedl.keras.callbacks._early_stopping import EarlyStopping
from pedl.keras.callbacks._reduce_lr_on_plateau import ReduceLROnPlateau
from pedl.keras.callbacks._tensorboard import TensorBoard, TFKerasTensorBoard

__all__ = ["Callback", "EarlyStopping", "ReduceLROnPlateau", "TFKerasTensorBoard", "TensorBoard"]
