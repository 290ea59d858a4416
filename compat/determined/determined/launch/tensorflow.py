"""``python3 -m determined.launch.tensorflow [--] COMMAND``: run the training command.

Under PEDL the entrypoint's launcher is read away and PEDL starts ``COMMAND`` itself (one
process per slot, with ``TF_CONFIG`` set for MultiWorkerMirroredStrategy where the trial has
several). Run by hand it runs ``COMMAND`` once, as Determined's does on one slot.
"""

from __future__ import annotations

import sys

from determined.launch import command_after_separator, run


def main(argv: list[str]) -> int:
    return run(command_after_separator(argv, "determined.launch.tensorflow"))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
