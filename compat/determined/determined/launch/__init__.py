"""``determined.launch``: Determined 0.38's launchers, as an entrypoint names them.

On PEDL the trial's processes are started by PEDL itself: an entrypoint such as
``python3 -m determined.launch.tensorflow -- python3 train.py`` runs ``python3 train.py`` as
the trial (one process per slot where the trial has several). Run by hand, the modules here
behave as Determined's on one machine: ``tensorflow`` runs the command; ``wrap_rank`` runs it
with each output line prefixed by the rank. ``torch_distributed``, ``deepspeed`` and
``horovod`` launch frameworks PEDL does not train and refuse, naming the alternative.
"""

from __future__ import annotations

import subprocess
from collections.abc import Sequence


def command_after_separator(argv: Sequence[str], launcher: str) -> list[str]:
    """The command a launcher's arguments name: what follows ``--``, or the arguments after
    the launcher's own options (``--flag``) when there is no ``--``."""
    args = list(argv)
    if "--" in args:
        args = args[args.index("--") + 1 :]
    else:
        while args and args[0].startswith("-"):
            args = args[1:]
    if not args:
        raise SystemExit(f"usage: python3 -m {launcher} [--] COMMAND [ARGS...]")
    return args


def run(command: Sequence[str]) -> int:
    """Run ``command`` (its output to this process's); return its exit status."""
    return subprocess.call(list(command))
