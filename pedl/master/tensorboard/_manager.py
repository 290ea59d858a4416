"""The master's TensorBoard processes: started, kept fed, stopped.

Each TensorBoard (``pedl tensorboard start``) is one ``tensorboard`` process (the pinned
``tensorboard`` package, run without TensorFlow: it starts in ~2 s) that this master starts
on loopback on a free port, with ``--path_prefix /tensorboard/<id>`` so the master proxies
it at that path behind its own sign-in (:mod:`pedl.master.api.tensorboards`); no other
port is opened. That port answers the master only: each TensorBoard has a random key
(:attr:`TensorBoard.key`, 256 bits), handed to its process on its standard input (never on
a command line or in an environment, which other processes may read), that the master's
proxy sends in the :data:`KEY_HEADER` header of each request; a small WSGI layer in front of
TensorBoard's app answers any request without it 403 (another local user, a trial). Its log
directory is a cache under the master's home,
``<home>/tensorboards/<id>/experiment_<e>/trial_<t>/``, one run per trial, which a sync
thread keeps up to date while the TensorBoard runs:

- every :data:`SYNC_INTERVAL_S` seconds, the trial's training and validation metrics, read
  from the database (the rows reported since the last pass), appended as scalars to an
  event file (:mod:`._events`);
- every :data:`FILES_INTERVAL_S` seconds, the event files the trial process wrote in its
  TensorBoard directory (the user's ``TensorBoard`` callback, or any writer), which it
  uploads to its checkpoint storage as it goes (:mod:`pedl.exec._event_uploads`), fetched
  from there (S3, GCS, Azure or a shared file system:
  :class:`pedl.storage.EventFileDownloader`) into the same run directory (a Keras
  callback's ``train/`` and ``validation/`` become runs of their own).

TensorBoard reads every file of a run as it grows (``--reload_multifile``).

At most ``max_tensorboards`` run at once (a start beyond that is refused with the reason);
a stop, the process's own end, or the master's shutdown ends the process (SIGTERM, then
SIGKILL after :data:`STOP_GRACE_S`; always waited for, so none is left behind) and removes
its cache. The processes end with the master even when it is SIGKILLed (each
watches its parent), and a master removes the caches a previous one left at start.
"""

from __future__ import annotations

import collections
import contextlib
import importlib.util
import logging
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path

from pedl.config import parse_config
from pedl.db import Database
from pedl.db import experiments as experiments_repo
from pedl.db import metrics as metrics_repo
from pedl.db import trials as trials_repo
from pedl.master.tensorboard._events import ScalarEventFile, scalars
from pedl.storage import EventFileDownloader, StorageManager, make_storage

logger = logging.getLogger("pedl.master.tensorboard")

LOG_LINES_KEPT = 50
"""The latest lines of a TensorBoard process's output the master keeps (its logs)."""

SYNC_INTERVAL_S = 1.0
FILES_INTERVAL_S = 5.0
"""The trials' own event files are fetched from their storage at most this often."""
STOP_GRACE_S = 5.0
START_TIMEOUT_S = 120.0
MAX_TENSORBOARDS = 8
MAX_TRIALS = 100
"""At most this many trials per TensorBoard (Determined's limit)."""
ROWS_PER_PASS = 5000
"""At most this many metric rows of one trial are written per sync pass."""
PATH_PREFIX = "/tensorboard"
KEY_HEADER = "X-PEDL-TensorBoard-Key"
"""The header carrying a TensorBoard's key (:attr:`TensorBoard.key`) from the master's proxy."""
_ADDRESS = re.compile(r"TensorBoard \S+ at http://127\.0\.0\.1:(\d+)/")
_LAUNCH = """
import hmac, os, sys, threading, time
# The master's key, the first line of standard input: every request must carry it.
key = sys.stdin.buffer.readline().strip()
sys.stdin.close()
if len(key) < 32:
    sys.exit("no key on standard input: only the PEDL master starts this TensorBoard")
# TensorBoard imports TensorFlow when it can (seconds, and memory) for features PEDL's
# scalars do not need; hidden, it runs on its own stub.
sys.modules["tensorflow"] = None
parent = os.getppid()
def watch():  # end with the master, even a SIGKILLed one
    while os.getppid() == parent:
        time.sleep(1)
    os._exit(0)
threading.Thread(target=watch, daemon=True).start()
REFUSED = b"This TensorBoard answers its PEDL master only: open it through the master.\\n"
def guarded(app):
    def guard(environ, start_response):
        given = environ.get("@ENVIRON_KEY@", "").encode("latin-1", "replace")
        if hmac.compare_digest(given, key):
            return app(environ, start_response)
        start_response("403 Forbidden", [("Content-Type", "text/plain; charset=utf-8"),
                                         ("Content-Length", str(len(REFUSED)))])
        return [REFUSED]
    return guard
sys.argv[0] = "tensorboard"
from absl import app as absl_app
from tensorboard import default, main_lib, program
from tensorboard.plugins import base_plugin
main_lib.global_init()
board = program.TensorBoard(
    plugins=default.get_plugins(),
    server_class=lambda app, flags: program.WerkzeugServer(guarded(app), flags),
)
try:
    absl_app.run(board.main, flags_parser=board.configure)
except base_plugin.FlagsError as err:
    print("Error:", err, file=sys.stderr)
    sys.exit(1)
""".replace("@ENVIRON_KEY@", "HTTP_" + KEY_HEADER.upper().replace("-", "_"))


class TensorBoardState(StrEnum):
    STARTING = "STARTING"
    RUNNING = "RUNNING"
    STOPPED = "STOPPED"
    FAILED = "FAILED"


class TensorBoardError(Exception):
    """A TensorBoard cannot be started or found; ``status`` is the HTTP status to answer."""

    def __init__(self, status: int, message: str, *, field: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.field = field


@dataclass(frozen=True)
class TrialSource:
    """One trial a TensorBoard shows."""

    experiment_id: int
    trial_id: int

    @property
    def run(self) -> str:
        return f"experiment_{self.experiment_id}/trial_{self.trial_id}"


@dataclass
class _TrialSync:
    source: TrialSource
    events: ScalarEventFile
    files: EventFileDownloader | None
    after_row: int = 0


@dataclass
class TensorBoard:
    """One TensorBoard process and what it shows."""

    id: str
    owner: str
    experiment_ids: list[int]
    trial_ids: list[int]
    directory: Path
    created_at: datetime
    key: str = field(default_factory=lambda: secrets.token_urlsafe(32), repr=False)
    """The secret its process asks of every request (in :data:`KEY_HEADER`): only the
    master's proxy knows it."""
    followed: list[int] = field(default_factory=list)
    """The experiments it was started over: their trials created later join it."""
    state: TensorBoardState = TensorBoardState.STARTING
    port: int | None = None
    exit_code: int | None = None
    error: str | None = None
    process: subprocess.Popen[bytes] | None = None
    log: collections.deque[str] = field(
        default_factory=lambda: collections.deque(maxlen=LOG_LINES_KEPT)
    )
    syncs: list[_TrialSync] = field(default_factory=list)
    stop_requested: bool = False
    sync_lock: threading.Lock = field(default_factory=threading.Lock)
    files_fetched_at: float | None = None
    """Held by a sync pass (the start's first one and the sync thread's may overlap)."""

    @property
    def service_address(self) -> str:
        """Where the master serves it (a path on the master)."""
        return f"{PATH_PREFIX}/{self.id}/"

    @property
    def pid(self) -> int | None:
        return None if self.process is None else self.process.pid


class TensorBoardManager:
    """Starts, syncs and stops the master's TensorBoard processes (see the module's
    docstring)."""

    def __init__(
        self,
        database: Database,
        home: Path,
        *,
        max_tensorboards: int = MAX_TENSORBOARDS,
    ) -> None:
        self.database = database
        self.root = home / "tensorboards"
        self.max_tensorboards = max_tensorboards
        self._boards: dict[str, TensorBoard] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # -- lifecycle of the manager ----------------------------------------------------------

    def start(self) -> None:
        """Remove the caches a previous master left, and start the sync thread."""
        shutil.rmtree(self.root, ignore_errors=True)
        self._stop.clear()
        self._thread = threading.Thread(
            target=self._sync_loop, name="pedl-tensorboard", daemon=True
        )
        self._thread.start()

    def close(self) -> None:
        """Stop every TensorBoard (waiting for each process) and the sync thread."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=30)
        with self._lock:
            boards = list(self._boards.values())
        for board in boards:
            self._end(board, TensorBoardState.STOPPED)

    # -- the API's operations --------------------------------------------------------------

    def launch(
        self,
        owner: str,
        sources: Sequence[TrialSource],
        experiment_ids: Sequence[int],
        *,
        followed: Sequence[int] = (),
    ) -> TensorBoard:
        """Start a TensorBoard over ``sources`` for ``owner`` (a running one of the same
        owner over the same trials is returned instead). Trials of the ``followed``
        experiments created later join it (up to :data:`MAX_TRIALS` in all)."""
        if importlib.util.find_spec("tensorboard") is None:
            raise TensorBoardError(
                503,
                "the master cannot run TensorBoard: the tensorboard package is not installed "
                "beside it (pip install 'pedl[tensorboard]')",
            )
        if not sources:
            raise TensorBoardError(422, "no trials to show: the experiments have none yet")
        if len(sources) > MAX_TRIALS:
            raise TensorBoardError(
                422,
                f"a TensorBoard shows at most {MAX_TRIALS} trials, not {len(sources)}",
                field="trial_ids",
            )
        trial_ids = sorted({s.trial_id for s in sources})
        with self._lock:
            for board in self._boards.values():
                alive = board.state in (TensorBoardState.STARTING, TensorBoardState.RUNNING)
                if alive and board.owner == owner and board.trial_ids == trial_ids:
                    return board
            failed = [b for b in self._boards.values() if b.state is TensorBoardState.FAILED]
            failed.sort(key=lambda b: b.created_at)
            for old in failed[: max(0, len(failed) - self.max_tensorboards)]:
                del self._boards[old.id]  # the latest failures stay listed, with their reason
            alive_count = sum(
                b.state in (TensorBoardState.STARTING, TensorBoardState.RUNNING)
                for b in self._boards.values()
            )
            if alive_count >= self.max_tensorboards:
                raise TensorBoardError(
                    409,
                    f"{alive_count} TensorBoards are running, the most this master runs at "
                    "once: stop one first (pedl tensorboard list / stop)",
                )
            board_id = uuid.uuid4().hex
            board = TensorBoard(
                id=board_id,
                owner=owner,
                experiment_ids=sorted(set(experiment_ids)),
                trial_ids=trial_ids,
                directory=self.root / board_id,
                created_at=datetime.now(UTC),
                followed=sorted(set(followed)),
            )
            self._boards[board_id] = board
        try:
            self._prepare(board, sources)
            board.process = self._spawn(board)
        except BaseException as err:
            with self._lock:
                self._boards.pop(board_id, None)
            shutil.rmtree(board.directory, ignore_errors=True)
            if isinstance(err, OSError):
                raise TensorBoardError(503, f"cannot start tensorboard: {err}") from err
            raise
        threading.Thread(
            target=self._watch, args=(board,), name=f"pedl-tensorboard-{board_id[:8]}", daemon=True
        ).start()
        logger.info(
            "TensorBoard %s started for %s: trials %s (pid %d)",
            board_id,
            owner,
            ", ".join(map(str, trial_ids)),
            board.process.pid,
        )
        return board

    def _prepare(self, board: TensorBoard, sources: Sequence[TrialSource]) -> None:
        """The board's runs, and what there is to show now, before TensorBoard first reads
        its directory."""
        self._add_trials(board, sources)
        board.directory.mkdir(parents=True, exist_ok=True)
        self._sync(board)

    def _add_trials(self, board: TensorBoard, sources: Sequence[TrialSource]) -> None:
        storages = self._storages({s.experiment_id for s in sources})
        for source in sorted(set(sources), key=lambda s: s.trial_id):
            run = board.directory / source.run
            storage = storages.get(source.experiment_id)
            files = None if storage is None else EventFileDownloader(storage, source.trial_id, run)
            board.syncs.append(_TrialSync(source, ScalarEventFile(run), files))

    def _follow(self, board: TensorBoard) -> None:
        """Add the followed experiments' trials created since the last pass (while the board
        shows fewer than :data:`MAX_TRIALS`)."""
        if not board.followed:
            return
        shown = {sync.source.trial_id for sync in board.syncs}
        with self.database.session() as session:
            new = [
                TrialSource(experiment_id, trial.id)
                for experiment_id in board.followed
                for trial in trials_repo.all_trials(session, experiment_id)
                if trial.id not in shown
            ]
        new = sorted(new, key=lambda s: s.trial_id)[: max(0, MAX_TRIALS - len(shown))]
        if new:
            self._add_trials(board, new)
            board.trial_ids = sorted(shown | {s.trial_id for s in new})
            logger.info(
                "TensorBoard %s: trials %s joined",
                board.id,
                ", ".join(str(s.trial_id) for s in new),
            )

    def get(self, board_id: str) -> TensorBoard:
        with self._lock:
            board = self._boards.get(board_id)
        if board is None:
            raise TensorBoardError(404, f"no TensorBoard {board_id!r}", field="tensorboard_id")
        return board

    def list(self) -> list[TensorBoard]:
        with self._lock:
            return sorted(self._boards.values(), key=lambda b: b.created_at)

    def stop(self, board_id: str) -> TensorBoard:
        """End TensorBoard ``board_id``'s process (waiting for it) and forget it."""
        board = self.get(board_id)
        self._end(board, TensorBoardState.STOPPED)
        with self._lock:
            self._boards.pop(board_id, None)
        return board

    # -- processes -------------------------------------------------------------------------

    def _spawn(self, board: TensorBoard) -> subprocess.Popen[bytes]:
        command = [
            sys.executable, "-c", _LAUNCH,
            "--logdir", str(board.directory),
            "--host", "127.0.0.1",
            "--port", "0",
            "--path_prefix", f"{PATH_PREFIX}/{board.id}",
            "--reload_interval", "1",
            "--reload_multifile", "true",
            "--load_fast", "false",
            "--window_title", f"PEDL TensorBoard: trials {', '.join(map(str, board.trial_ids))}",
        ]  # fmt: skip
        # Not the master's environment: nothing of its secrets (database URL, passwords).
        env = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG", "TMPDIR")}
        process = subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            env=env,
            cwd=board.directory,
            start_new_session=True,
        )
        assert process.stdin is not None
        with process.stdin, contextlib.suppress(BrokenPipeError):  # its output says why
            process.stdin.write(board.key.encode() + b"\n")
        return process

    def _watch(self, board: TensorBoard) -> None:
        """Read the process's output (its address, then its log) until it ends."""
        process = board.process
        assert process is not None and process.stdout is not None
        with process.stdout:
            for raw in process.stdout:
                line = raw.decode(errors="replace").rstrip()
                board.log.append(line)
                match = _ADDRESS.search(line)
                if match and board.state is TensorBoardState.STARTING:
                    board.port = int(match[1])
                    board.state = TensorBoardState.RUNNING
                    logger.info("TensorBoard %s serves on 127.0.0.1:%d", board.id, board.port)
        code = process.wait()
        if not board.stop_requested and board.state is not TensorBoardState.STOPPED:
            tail = " | ".join(list(board.log)[-5:])
            board.exit_code = code
            board.error = f"tensorboard exited with status {code}: {tail or 'no output'}"
            board.state = TensorBoardState.FAILED
            logger.warning("TensorBoard %s: %s", board.id, board.error)
            shutil.rmtree(board.directory, ignore_errors=True)

    def _end(self, board: TensorBoard, state: TensorBoardState) -> None:
        board.stop_requested = True
        process = board.process
        if process is not None and process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout=STOP_GRACE_S)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
                process.wait()
        if process is not None:
            board.exit_code = process.returncode
        if board.state is not TensorBoardState.FAILED:
            board.state = state
        shutil.rmtree(board.directory, ignore_errors=True)
        logger.info("TensorBoard %s stopped", board.id)

    # -- syncing ---------------------------------------------------------------------------

    def _sync_loop(self) -> None:
        while not self._stop.wait(SYNC_INTERVAL_S):
            for board in self.list():
                if board.state in (TensorBoardState.STARTING, TensorBoardState.RUNNING):
                    try:
                        self._sync(board)
                    except Exception:
                        logger.exception("TensorBoard %s: sync failed (retried)", board.id)

    def _storages(self, experiment_ids: set[int]) -> dict[int, StorageManager]:
        """Each experiment's checkpoint storage (where its trials' event files are); one
        that cannot be opened is logged and left out (its metrics are still shown)."""
        storages: dict[int, StorageManager] = {}
        for experiment_id in sorted(experiment_ids):
            try:
                with self.database.session() as session:
                    config = experiments_repo.get_experiment(session, experiment_id).config
                storages[experiment_id] = make_storage(parse_config(config).checkpoint_storage)
            except Exception as err:
                logger.warning(
                    "experiment %d: its trials' TensorBoard files are not shown: %s",
                    experiment_id,
                    err,
                )
        return storages

    def _sync(self, board: TensorBoard) -> None:
        with board.sync_lock:
            self._follow(board)
            self._sync_locked(board)
            now = time.monotonic()
            if (
                board.files_fetched_at is not None
                and now - board.files_fetched_at < FILES_INTERVAL_S
            ):
                return
            board.files_fetched_at = now
            for sync in board.syncs:
                if sync.files is None:
                    continue
                try:
                    sync.files.download()
                except Exception as err:
                    logger.warning(
                        "TensorBoard %s: trial %d's files not fetched (retried): %s",
                        board.id,
                        sync.source.trial_id,
                        err,
                    )

    def _sync_locked(self, board: TensorBoard) -> None:
        with self.database.session() as session:
            for sync in board.syncs:
                rows = metrics_repo.rows_after(
                    session, sync.source.trial_id, sync.after_row, limit=ROWS_PER_PASS
                )
                if not rows:
                    continue
                sync.events.append(
                    (r.total_batches, _utc(r.reported_at).timestamp(), scalars(r.kind, r.metrics))
                    for r in rows
                )
                sync.after_row = rows[-1].id


def _utc(moment: datetime) -> datetime:
    """A stored time (SQLite's come back naive, in UTC) as an aware one."""
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment
