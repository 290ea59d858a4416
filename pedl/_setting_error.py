"""The error of a PEDL setting in the environment (``PEDL_MAX_*``) that PEDL cannot use.

Its own module, outside :mod:`pedl.config` (whose import reads those settings), so that the
``pedl`` command can catch it around that import."""


class SettingError(ValueError):
    """An environment variable of PEDL's holds a value PEDL cannot use; the message names the
    variable, the values it takes and the value it holds."""
