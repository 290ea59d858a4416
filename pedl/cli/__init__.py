"""The ``pedl`` command line, and ``det`` (the same commands as Determined's ``det``)."""

import sys
from typing import TYPE_CHECKING, Any

from pedl._setting_error import SettingError

if TYPE_CHECKING:
    from pedl.cli._main import cli

__all__ = ["cli", "det_main", "main"]


def main() -> None:
    """Run the ``pedl`` command. A PEDL setting in the environment that PEDL cannot use (a
    ``PEDL_MAX_*`` variable, read when a command's modules are imported, which is when the
    command runs) ends it with the message and exit status 2, as click does for a bad option,
    not with a traceback."""
    from pedl.cli._main import cli

    try:
        cli()
    except SettingError as err:
        print(f"Error: {err}", file=sys.stderr)
        raise SystemExit(2) from None


def det_main() -> None:
    """Run the ``det`` command: ``pedl``'s commands as Determined's ``det`` takes and prints
    them (:mod:`pedl.cli._det`)."""
    from pedl.cli._det import det

    try:
        det()
    except SettingError as err:
        print(f"Error: {err}", file=sys.stderr)
        raise SystemExit(2) from None


def __getattr__(name: str) -> Any:
    if name == "cli":
        from pedl.cli._main import cli

        return cli
    raise AttributeError(f"module 'pedl.cli' has no attribute {name!r}")
