"""The one exception every framework controller raises when a trial cannot go on.

``pedl.keras.TrialError``, ``pedl.tensorflow.TrialError`` and ``pedl.estimator.TrialError`` are
this class, so one ``except`` catches it from any framework. It is not
:class:`pedl.vocabulary.TrialError`, the platform's record of why a trial errored (type,
message, user-code location), which describes this exception as it does any other."""


class TrialError(RuntimeError):
    """The trial cannot go on; the message says why in the user's terms."""
