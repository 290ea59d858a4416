"""A local run's log file, and a terminal that shows only what the user must see.

:class:`RunLog` is what ``pedl experiment create --local`` and ``pedl experiment resume`` run
in: every log record (INFO and up; DEBUG with ``-v``) goes to ``experiment.log`` in the run's
directory, the Alembic migrations and the engine's notes included, and so do TensorFlow's
C++ start-up lines (absl, oneDNN, CPU instructions: :func:`pedl._tf_noise.is_tf_noise`, as
for the master's trials), which TensorFlow writes on file descriptor 2 and which are taken
off it here. The terminal keeps warnings and errors, but for records logged with
:data:`FILE_ONLY` (a failed trial's traceback, which the summary points to), and everything
else written on stderr. With ``-v`` (the root logger at DEBUG) the terminal shows every
record, as before. Without :meth:`RunLog.open` (``--test``, which keeps no record) what the
file would hold is dropped.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import threading
from logging.handlers import MemoryHandler
from pathlib import Path
from types import TracebackType

from pedl._tf_noise import is_tf_noise

FILE_NAME = "experiment.log"

FILE_ONLY = {"pedl_file_only": True}
"""``extra=`` of a record that goes to the run's log file only."""

_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
_BUFFERED = 100_000
"""Records held until the run's directory exists (the migrations of a new run's record)."""

_noise_logger = logging.getLogger("pedl.local.stderr")


class _TerminalFilter(logging.Filter):
    def __init__(self, verbose: bool) -> None:
        super().__init__()
        self.verbose = verbose

    def filter(self, record: logging.LogRecord) -> bool:
        if getattr(record, "pedl_file_only", False):
            return False
        return self.verbose or record.levelno >= logging.WARNING


class _StderrNoiseFilter:
    """File descriptor 2 through a pipe: TensorFlow's start-up lines to the log file (as
    :data:`FILE_ONLY` records), every other line on to the real stderr."""

    def __init__(self) -> None:
        self._saved = -1
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        sys.stderr.flush()
        self._saved = os.dup(2)
        read, write = os.pipe()
        os.dup2(write, 2)
        os.close(write)
        self._thread = threading.Thread(
            target=self._pump, args=(read,), name="pedl-stderr", daemon=True
        )
        self._thread.start()

    def _pump(self, read: int) -> None:
        with os.fdopen(read, "rb") as source:
            for raw in source:
                if is_tf_noise(raw.decode("utf-8", errors="replace")):
                    text = raw.decode("utf-8", errors="replace").rstrip("\r\n")
                    _noise_logger.info("%s", text, extra=FILE_ONLY)
                else:
                    os.write(self._saved, raw)

    def stop(self) -> None:
        if self._thread is None:
            return
        sys.stderr.flush()
        os.dup2(self._saved, 2)  # the pipe's last writer closed: the pump reads to its end
        self._thread.join(timeout=5)
        os.close(self._saved)
        self._thread = None


class RunLog:
    """The context a local run's command runs in (see the module's docstring); :meth:`open`
    names the run's directory once it exists (records until then are kept and written
    first)."""

    def __init__(self) -> None:
        root = logging.getLogger()
        self.verbose = root.getEffectiveLevel() <= logging.DEBUG
        self.path: Path | None = None
        self._buffer = MemoryHandler(_BUFFERED, flushLevel=logging.CRITICAL + 1, flushOnClose=False)
        self._buffer.setLevel(logging.DEBUG if self.verbose else logging.INFO)
        self._file: logging.Handler | None = None
        self._terminal_filter = _TerminalFilter(self.verbose)
        self._filtered: list[logging.Handler] = []
        self._stderr = _StderrNoiseFilter()

    def __enter__(self) -> RunLog:
        root = logging.getLogger()
        for handler in root.handlers:
            if isinstance(handler, logging.StreamHandler) and not isinstance(
                handler, logging.FileHandler
            ):
                handler.addFilter(self._terminal_filter)
                self._filtered.append(handler)
        root.addHandler(self._buffer)
        if not self.verbose:
            self._stderr.start()
        return self

    def open(self, directory: Path) -> None:
        """Write to ``directory/experiment.log`` (appended to: a resumed run adds to it)."""
        self.path = directory / FILE_NAME
        handler = logging.FileHandler(self.path, encoding="utf-8")
        handler.setLevel(self._buffer.level)
        handler.setFormatter(logging.Formatter(_FORMAT))
        # The buffer stays and passes each record on at once (capacity 0): swapping handlers
        # instead lost the records other threads (the stderr pump) logged in between.
        with self._buffer.lock or contextlib.nullcontext():
            self._buffer.setTarget(handler)
            self._buffer.capacity = 0
        self._buffer.flush()
        self._file = handler

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._stderr.stop()
        logging.getLogger().removeHandler(self._buffer)
        if self._file is not None:
            self._buffer.flush()
            self._file.close()
        self._buffer.close()
        for handler in self._filtered:
            handler.removeFilter(self._terminal_filter)
