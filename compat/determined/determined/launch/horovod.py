"""``determined.launch.horovod``: Horovod's launcher, refused when run (under PEDL an
entrypoint ``python3 -m determined.launch.horovod --trial model_def:Trial`` runs the Trial
class itself; PEDL distributes it with tf.distribute)."""

from determined._unsupported import UnsupportedFeatureError

raise UnsupportedFeatureError(
    "determined.launch.horovod",
    "PEDL distributes training with tf.distribute (MultiWorkerMirroredStrategy), not Horovod: "
    "name the Trial class as the entrypoint (or keep --trial module:Class, which PEDL reads) "
    "and set resources.slots_per_trial",
)
