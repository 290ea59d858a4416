"""``determined.launch.deepspeed``: launches DeepSpeed, which PEDL does not train."""

from determined._unsupported import UnsupportedFeatureError

raise UnsupportedFeatureError(
    "determined.launch.deepspeed",
    "It launches DeepSpeed; PEDL trains TensorFlow and Keras models: use "
    "determined.launch.tensorflow with a Keras script, or a Trial class with "
    "resources.slots_per_trial",
)
