"""``python3 -m determined.launch.wrap_rank RANK [--] COMMAND``: run ``COMMAND`` with each line
of its output prefixed by ``[rank=RANK] `` (Determined 0.38's helper; ``RANK`` may name an
environment variable, e.g. ``RANK`` or ``HOROVOD_RANK``)."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from typing import IO

from determined.launch import command_after_separator


def _copy(source: IO[bytes], sink: IO[bytes], prefix: bytes) -> None:
    for line in iter(source.readline, b""):
        sink.write(prefix + line)
        sink.flush()


def main(argv: list[str]) -> int:
    if not argv:
        raise SystemExit("usage: python3 -m determined.launch.wrap_rank RANK [--] COMMAND")
    rank = argv[0]
    if not rank.isdigit():
        rank = os.environ.get(rank, rank)
    command = command_after_separator(argv[1:], "determined.launch.wrap_rank")
    prefix = f"[rank={rank}] ".encode()
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert process.stdout is not None and process.stderr is not None
    threads = [
        threading.Thread(target=_copy, args=(process.stdout, sys.stdout.buffer, prefix)),
        threading.Thread(target=_copy, args=(process.stderr, sys.stderr.buffer, prefix)),
    ]
    for thread in threads:
        thread.start()
    status = process.wait()
    for thread in threads:
        thread.join()
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
