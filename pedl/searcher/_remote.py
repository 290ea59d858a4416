"""A search method that runs in a process of its own: how PEDL runs custom searchers."""

from __future__ import annotations

import collections
import contextlib
import logging
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
import weakref
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO, Any

from pedl.config import ExperimentConfig
from pedl.searcher._errors import SearcherError
from pedl.searcher._exited_reason import ExitedReason
from pedl.searcher._operations import Operation, operation_from_dict
from pedl.searcher._protocol import (
    EVENT_CALLS,
    MAX_MESSAGE_BYTES,
    MAX_OPERATIONS,
    PROTOCOL_VERSION,
    ProtocolError,
    RemoteError,
    decode,
    encode,
)
from pedl.searcher._search_method import SearcherState, SearchMethod

logger = logging.getLogger("pedl.searcher")

HOST_MODULE = "pedl.searcher._host"
"""The module the searcher process runs (``python -m``)."""

CALL_TIMEOUT = 60.0
"""Seconds the searcher process has to answer one call, by default."""

START_TIMEOUT = float(os.environ.get("PEDL_SEARCHER_START_TIMEOUT") or 120.0)
"""Seconds it has to import the model definition and construct the method, by default
(``PEDL_SEARCHER_START_TIMEOUT`` in the master's or local mode's environment: a KerasTuner
search's searcher imports TensorFlow and runs the script up to ``tuner.search``)."""

_STOP_GRACE = 2.0
_STDERR_TAIL = 20
_ROOT = str(Path(__file__).resolve().parents[2])
"""Where ``pedl`` is imported from: the searcher process imports the same one."""


class CustomSearcherError(SearcherError):
    """The custom searcher failed: its code raised, its process crashed or hung, or it broke
    the protocol. The message says which, naming the user's exception, file and line;
    :attr:`traceback` holds the searcher process's traceback, where there is one."""

    def __init__(self, message: str, traceback: str = "") -> None:
        super().__init__(message)
        self.traceback = traceback


class _Timeout(Exception):
    pass


class _Closed(Exception):
    pass


class RemoteSearchMethod(SearchMethod):
    """Forwards every :class:`SearchMethod` call to a searcher process that runs the custom
    search method of a model definition (``searcher: {name: custom}``).

    The process (``python -m pedl.searcher._host``, in its own session, with ``base_env``
    (default this process's environment; the master passes its trials' environment, without
    its own settings and secrets), the experiment's CPU environment variables and, unless they
    say otherwise, no GPU) unpacks ``archive``
    (a packaged model definition) or uses ``code_dir``, imports the class
    ``config.searcher.search_method`` names, constructs it, and answers calls as JSON lines
    (:mod:`pedl.searcher._protocol`). The constructor returns once it is ready, or has failed
    within ``start_timeout`` seconds: then :attr:`failure` holds the error and every call
    raises it (so the experiment, not its shell, ends in error: an engine's first call is
    ``initial_operations``, or its replay). Only an OS error starting the process at all
    (``command`` not found) raises from the constructor.

    Guarantees: no user code runs in this process. Each call is answered within
    ``call_timeout`` seconds or fails; an answer over ``MAX_MESSAGE_BYTES`` or with more than
    ``MAX_OPERATIONS`` operations fails; any failure (the user's code raised, the process
    exited, hung, or answered something that is not the protocol) raises
    :class:`CustomSearcherError`, stops the process, and every later call raises the same
    error. :meth:`progress` never raises: it answers the last progress it had (and the
    failure surfaces at the next event); it asks the process only when an event happened
    since. The process's stderr (the user's prints and logs) goes to the ``pedl.searcher``
    logger. :meth:`close` (or garbage collection) stops the process; it also exits when its
    parent dies.

    Thread-safe: calls are serialised; :meth:`close` may come from any thread.
    """

    def __init__(
        self,
        config: ExperimentConfig,
        *,
        code_dir: str | os.PathLike[str] | None = None,
        archive: bytes | None = None,
        call_timeout: float = CALL_TIMEOUT,
        start_timeout: float = START_TIMEOUT,
        command: Sequence[str] | None = None,
        base_env: Mapping[str, str] | None = None,
    ) -> None:
        if (code_dir is None) == (archive is None):
            raise ValueError("give exactly one of code_dir and archive")
        self._call_timeout = call_timeout
        self._lock = threading.Lock()
        self._failure: CustomSearcherError | None = None
        self._closed = False
        self._next_id = 0
        self._buffer = bytearray()
        self._progress = 0.0
        self._progress_key: tuple[int, bool] | None = None
        self._stderr: collections.deque[str] = collections.deque(maxlen=_STDERR_TAIL)
        # Named after this process, so that a master started after this one died removes it
        # (pedl.master._temp_dirs).
        self._workdir = Path(tempfile.mkdtemp(prefix=f"pedl-searcher-{os.getpid()}-"))
        archive_path: Path | None = None
        if archive is not None:
            archive_path = self._workdir / "model_def.tar.gz"
            archive_path.write_bytes(archive)
            code = self._workdir / "code"
        else:
            assert code_dir is not None
            code = Path(code_dir).resolve()
        base = os.environ if base_env is None else base_env
        path = os.pathsep.join(p for p in (_ROOT, base.get("PYTHONPATH")) if p)
        env = {
            **base,
            "CUDA_VISIBLE_DEVICES": "",  # a searcher needs no GPU; its trials may
            **config.environment.env_dict(gpu=False),
            "PYTHONPATH": path,
            "PYTHONUNBUFFERED": "1",
        }
        try:
            self._proc = subprocess.Popen(
                list(command or [sys.executable, "-m", HOST_MODULE]),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                cwd=self._workdir,
                env=env,
                start_new_session=True,
            )
        except OSError as e:
            _remove(self._workdir)
            raise CustomSearcherError(f"the custom searcher's process could not start: {e}") from e
        assert self._proc.stdin is not None and self._proc.stdout is not None
        self._finalizer = weakref.finalize(self, _stop, self._proc, self._workdir)
        self.pid = self._proc.pid
        """The searcher process's id."""
        self._stdin, self._stdout = self._proc.stdin, self._proc.stdout
        os.set_blocking(self._stdin.fileno(), False)
        self._readable = select.poll()
        self._readable.register(self._stdout.fileno(), select.POLLIN)
        self._writable = select.poll()
        self._writable.register(self._stdin.fileno(), select.POLLOUT)
        self._stderr_reader = threading.Thread(
            target=_read_stderr,
            args=(self._proc.stderr, self.pid, self._stderr),
            name=f"pedl-searcher-{self.pid}-stderr",
            daemon=True,
        )
        self._stderr_reader.start()
        hello = {
            "protocol": PROTOCOL_VERSION,
            "config": config.as_dict(),
            "code_dir": str(code),
            "archive": str(archive_path) if archive_path is not None else None,
            "workdir": str(self._workdir),
        }
        self.searcher_class = ""
        """The custom search method's class, ``module.Class`` (empty if it did not start)."""
        with contextlib.suppress(CustomSearcherError):  # kept in self._failure
            self._start(hello, start_timeout)

    # the search method ------------------------------------------------------------------------

    def initial_operations(self, searcher_state: SearcherState) -> list[Operation]:
        return self._operations("initial_operations", searcher_state)

    def on_trial_created(
        self, searcher_state: SearcherState, request_id: uuid.UUID
    ) -> list[Operation]:
        return self._operations("on_trial_created", searcher_state, request_id=str(request_id))

    def on_validation_completed(
        self,
        searcher_state: SearcherState,
        request_id: uuid.UUID,
        metric: float,
        train_length: int,
    ) -> list[Operation]:
        return self._operations(
            "on_validation_completed",
            searcher_state,
            request_id=str(request_id),
            metric=float(metric),
            train_length=int(train_length),
        )

    def on_trial_closed(
        self, searcher_state: SearcherState, request_id: uuid.UUID
    ) -> list[Operation]:
        return self._operations("on_trial_closed", searcher_state, request_id=str(request_id))

    def on_trial_exited_early(
        self,
        searcher_state: SearcherState,
        request_id: uuid.UUID,
        exited_reason: ExitedReason,
    ) -> list[Operation]:
        return self._operations(
            "on_trial_exited_early",
            searcher_state,
            request_id=str(request_id),
            exited_reason=ExitedReason(exited_reason).value,
        )

    def progress(self, searcher_state: SearcherState) -> float:
        key = (searcher_state.last_event_id, searcher_state.experiment_completed)
        if key == self._progress_key or self._failure is not None or self._closed:
            return self._progress
        try:
            value = self._call("progress", searcher_state)
        except CustomSearcherError:
            return self._progress  # kept in self._failure: the next event raises it
        if isinstance(value, bool) or not isinstance(value, int | float):
            self._fail(CustomSearcherError(f"the custom searcher's progress was {value!r:.100}"))
            return self._progress
        self._progress, self._progress_key = float(value), key
        return self._progress

    def save(self, searcher_state: SearcherState, path: Path, *, experiment_id: int = 0) -> None:
        path.mkdir(parents=True, exist_ok=True)
        self._call("save", searcher_state, path=str(path.resolve()), experiment_id=experiment_id)

    def load(self, path: Path) -> tuple[SearcherState, int]:
        record = self._call("load", None, path=str(path.resolve()))
        state = SearcherState()
        try:
            state.from_dict(record["state"])
            experiment_id = int(record["experiment_id"])
        except (AttributeError, KeyError, TypeError, ValueError) as e:
            raise self._fail(
                CustomSearcherError(f"the custom searcher's load answered {record!r:.200}: {e}")
            ) from e
        return state, experiment_id

    def save_method_state(self, path: Path) -> None:
        self._call("save_method_state", None, path=str(path.resolve()))

    def load_method_state(self, path: Path) -> None:
        self._call("load_method_state", None, path=str(path.resolve()))

    # life ---------------------------------------------------------------------------------------

    @property
    def failure(self) -> CustomSearcherError | None:
        """The error that stopped the searcher, if one did."""
        return self._failure

    def close(self) -> None:
        """Stop the searcher process (its stdin is closed; it is killed if it has not exited
        within two seconds) and remove its files. Idempotent."""
        self._closed = True
        idle = self._lock.acquire(blocking=False)
        try:
            if idle:
                try:
                    self._stdin.close()
                    self._proc.wait(timeout=_STOP_GRACE)
                except (OSError, subprocess.TimeoutExpired):
                    pass
            self._finalizer()
        finally:
            if idle:
                self._lock.release()
        if not idle:
            # A call is in flight (another thread): the kill makes it return at once.
            with self._lock:
                pass
        self._stdout.close()
        if not self._stdin.closed:
            self._stdin.close()

    def __enter__(self) -> RemoteSearchMethod:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # internals ---------------------------------------------------------------------------------

    def _start(self, hello: dict[str, Any], timeout: float) -> None:
        with self._lock:
            message = self._exchange(hello, "start", timeout, None)
        if "error" in message:
            raise self._fail(
                self._remote_error(message["error"], "the custom searcher could not start: ")
            )
        ready = message.get("ready")
        if not isinstance(ready, dict) or not isinstance(ready.get("class"), str):
            raise self._fail(
                CustomSearcherError(
                    f"the custom searcher's process answered {message!r:.200} to the hello"
                )
            )
        self.searcher_class = ready["class"]
        logger.info("custom searcher %s runs in process %d", self.searcher_class, self.pid)

    def _operations(self, call: str, searcher_state: SearcherState, **args: Any) -> list[Operation]:
        assert call in EVENT_CALLS
        records = self._call(call, searcher_state, **args)
        if not isinstance(records, list):
            raise self._fail(
                CustomSearcherError(f"the custom searcher answered {call} with {records!r:.200}")
            )
        if len(records) > MAX_OPERATIONS:
            raise self._fail(
                CustomSearcherError(
                    f"the custom searcher's {call} returned {len(records)} operations, more "
                    f"than the limit of {MAX_OPERATIONS} per call"
                )
            )
        try:
            return [operation_from_dict(r if isinstance(r, dict) else {}) for r in records]
        except SearcherError as e:
            raise self._fail(
                CustomSearcherError(f"the custom searcher answered {call} with garbage: {e}")
            ) from e

    def _call(self, call: str, searcher_state: SearcherState | None, **args: Any) -> Any:
        with self._lock:
            if self._failure is not None:
                raise self._failure
            if self._closed:
                raise CustomSearcherError(f"the custom searcher was stopped before {call}")
            self._next_id += 1
            request = {
                "id": self._next_id,
                "call": call,
                "state": searcher_state.to_dict() if searcher_state is not None else None,
                "args": args,
            }
            message = self._exchange(request, call, self._call_timeout, self._next_id)
            if "error" in message:
                raise self._fail(
                    self._remote_error(message["error"], f"the custom searcher's {call} raised ")
                )
            if "result" not in message:
                raise self._fail(
                    CustomSearcherError(
                        f"the custom searcher answered {call} with {message!r:.200}, which has "
                        "no result"
                    )
                )
            return message["result"]

    def _exchange(
        self, request: dict[str, Any], call: str, timeout: float, ident: int | None
    ) -> dict[str, Any]:
        """Send ``request`` and read its answer (lock held); any failure stops the process."""
        deadline = time.monotonic() + timeout
        try:
            self._write(encode(request), deadline)
            message = decode(self._read_line(deadline))
        except _Timeout:
            what = "start" if call == "start" else f"answer {call}"
            raise self._fail(
                CustomSearcherError(
                    f"the custom searcher did not {what} within {timeout:g} s; its process was "
                    "stopped"
                )
            ) from None
        except _Closed:
            raise self._fail(self._exited(call)) from None
        except ProtocolError as e:
            raise self._fail(
                CustomSearcherError(f"the custom searcher answered {call} with garbage: {e}")
            ) from None
        if ident is not None and message.get("id") != ident:
            raise self._fail(
                CustomSearcherError(
                    f"the custom searcher answered {call} out of turn: {message!r:.200}"
                )
            )
        return message

    def _write(self, data: bytes, deadline: float) -> None:
        view = memoryview(data)
        fd = self._stdin.fileno()
        while view:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise _Timeout
            if not self._writable.poll(_millis(remaining)):
                continue
            try:
                written = os.write(fd, view)
            except BlockingIOError:
                continue
            except OSError as e:  # BrokenPipeError: the process is gone
                raise _Closed from e
            view = view[written:]

    def _read_line(self, deadline: float) -> bytes:
        fd = self._stdout.fileno()
        while True:
            end = self._buffer.find(b"\n")
            if end >= 0:
                line = bytes(self._buffer[:end])
                del self._buffer[: end + 1]
                return line
            if len(self._buffer) > MAX_MESSAGE_BYTES:
                raise ProtocolError(f"an answer longer than {MAX_MESSAGE_BYTES} bytes")
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise _Timeout
            if not self._readable.poll(_millis(remaining)):
                continue
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                raise _Closed
            self._buffer += chunk

    def _remote_error(self, record: Any, prefix: str) -> CustomSearcherError:
        try:
            error = RemoteError.from_dict(record)
        except ProtocolError as e:
            return CustomSearcherError(f"the custom searcher answered garbage: {e}")
        if error.traceback:
            logger.error("custom searcher (process %d):\n%s", self.pid, error.traceback.rstrip())
        return CustomSearcherError(prefix + error.summary(), error.traceback)

    def _exited(self, call: str) -> CustomSearcherError:
        try:
            code = self._proc.wait(timeout=_STOP_GRACE)
            how = _describe_exit(code)
        except subprocess.TimeoutExpired:
            how = "closed its pipe"
        self._stderr_reader.join(timeout=1.0)
        tail = [line for line in self._stderr if line.strip()][-3:]
        last = f"; its last output: {' | '.join(tail)}" if tail else ""
        message = f"the custom searcher's process {how} during {call}{last}"
        return CustomSearcherError(message, "\n".join(self._stderr))

    def _fail(self, error: CustomSearcherError) -> CustomSearcherError:
        """Record the failure, stop the process, and return the error to raise."""
        if self._failure is None:
            self._failure = error
            if not self._closed:
                logger.error("custom searcher (process %d) failed: %s", self.pid, error)
        self._finalizer()
        return self._failure


def _millis(seconds: float) -> int:
    return max(1, min(int(seconds * 1000) + 1, 2**31 - 1))


def _describe_exit(code: int) -> str:
    if code < 0:
        try:
            return f"was killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"was killed by signal {-code}"
    return f"exited with code {code}"


def _read_stderr(stream: IO[bytes] | None, pid: int, tail: collections.deque[str]) -> None:
    if stream is None:
        return
    with stream:
        for raw in iter(lambda: stream.readline(1 << 16), b""):
            line = raw.decode(errors="replace").rstrip("\n")
            tail.append(line)
            logger.info("custom searcher (process %d): %s", pid, line)


def _stop(proc: subprocess.Popen[bytes], workdir: Path) -> None:
    """Kill the searcher's process group (if it still runs) and remove its files."""
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            proc.kill()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            logger.warning("custom searcher process %d did not die", proc.pid)
    _remove(workdir)


def _remove(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)
