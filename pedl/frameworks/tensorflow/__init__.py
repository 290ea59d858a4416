"""``pedl.frameworks.tensorflow``: the PEDL 0.x TensorFlow API."""

from pedl.frameworks.tensorflow._tensorboard import TensorBoard
from pedl.tensorflow import TensorFlowTrial

__all__ = ["TensorBoard", "TensorFlowTrial"]
