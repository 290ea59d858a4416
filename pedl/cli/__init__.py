"""The ``pedl`` command line."""

from pedl.cli._main import cli, main

__all__ = ["cli", "main"]
