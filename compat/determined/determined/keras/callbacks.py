"""``determined.keras.callbacks``: PEDL's Keras callbacks (``pedl.keras.callbacks``)."""

from pedl.keras.callbacks import (
    Callback,
    EarlyStopping,
    ReduceLROnPlateau,
    TensorBoard,
    TFKerasTensorBoard,
)

__all__ = ["Callback", "EarlyStopping", "ReduceLROnPlateau", "TFKerasTensorBoard", "TensorBoard"]
