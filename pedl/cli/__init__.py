"""The ``pedl`` command line."""

import sys
from typing import TYPE_CHECKING, Any

from pedl._setting_error import SettingError

if TYPE_CHECKING:
    from pedl.cli._main import cli

__all__ = ["cli", "main"]


def main() -> None:
    """Run the ``pedl`` command. A PEDL setting in the environment that PEDL cannot use (a
    ``PEDL_MAX_*`` variable, read when the command's modules are imported) ends it with the
    message and exit status 2, as click does for a bad option, not with a traceback."""
    try:
        from pedl.cli._main import cli
    except SettingError as err:
        print(f"Error: {err}", file=sys.stderr)
        raise SystemExit(2) from None
    cli()


def __getattr__(name: str) -> Any:
    if name == "cli":
        from pedl.cli._main import cli

        return cli
    raise AttributeError(f"module 'pedl.cli' has no attribute {name!r}")
