"""``determined.launch.torch_distributed``: launches PyTorch, which PEDL does not train."""

from determined._unsupported import UnsupportedFeatureError

raise UnsupportedFeatureError(
    "determined.launch.torch_distributed",
    "It launches PyTorch; PEDL trains TensorFlow and Keras models: use "
    "determined.launch.tensorflow with a Keras script, or a Trial class with "
    "resources.slots_per_trial",
)
