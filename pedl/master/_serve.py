"""``pedl master``: the REST API and the orchestrator in one process."""

from __future__ import annotations

import errno
import gc
import logging
import os
import socket
import sys
import threading
from collections.abc import Callable

import uvicorn

from pedl.master._accounts import ADMIN_PASSWORD_ENV, announce_password, prepare_accounts
from pedl.master._master_log import MasterLog
from pedl.master._private import prepare_home
from pedl.master._reads import ReadProcesses
from pedl.master._settings import MasterSettings
from pedl.master._temp_dirs import remove_dead_owners_dirs
from pedl.master.api import create_app
from pedl.master.api._app import make_database
from pedl.master.orchestrator import Orchestrator

logger = logging.getLogger("pedl.master")

KEEP_ALIVE_S = 65

NO_AUTH_WARNING = (
    "auth is OFF (--no-auth): anyone who can connect to this master's port on this machine "
    "acts as the administrator, and can run code as the master's user. Use it on a laptop "
    "only; the master listens on loopback only."
)


def master_url(host: str, port: int) -> str:
    """The URL trial processes on this machine use to reach a master bound to host:port."""
    if host in ("", "0.0.0.0", "::"):
        host = "127.0.0.1"
    if ":" in host:
        host = f"[{host}]"
    return f"http://{host}:{port}"


class ListenError(Exception):
    """The master cannot listen on its address (port taken, no such address, no permission)."""

    def __init__(self, host: str, port: int, error: OSError) -> None:
        if error.errno == errno.EADDRINUSE:
            reason = f"port {port} on {host} is already in use (another master?)"
        else:
            reason = f"cannot listen on {host} port {port}: {error.strerror or error}"
        super().__init__(f"{reason}; choose another with --port")
        self.host, self.port, self.error = host, port, error


class _Server(uvicorn.Server):
    """uvicorn's server that freezes the heap once the app has started (:func:`freeze_heap`)."""

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets=sockets)
        if self.started:
            freeze_heap()


def freeze_heap() -> None:
    """Move every object alive now (modules, classes, schemas, the app: ~150,000 objects)
    out of the cyclic garbage collector's reach (``gc.freeze``); they are still freed by
    reference counting. Without it each full collection walked them all: under P5b's load
    one every ~1.5 s, 60-300 ms each with the GIL held, which alone made the report
    latency's p99 (bench/RESULTS.md)."""
    gc.collect()
    gc.freeze()


def serve(settings: MasterSettings) -> None:
    """Run the master until SIGINT/SIGTERM: bind ``settings.host:settings.port`` (port 0
    picks a free one; the chosen address is logged), apply migrations, create the ``admin``
    account at the first start (:func:`prepare_accounts`), start the orchestrator
    (which restores every unfinished experiment), and serve the REST API. On a graceful stop
    the trial processes are killed; they resume from their latest checkpoints next time.
    The temporary directories of masters that died without removing them go first
    (:func:`remove_dead_owners_dirs`). Raises :class:`ListenError` when the address cannot
    be bound, :class:`~pedl.master._private.ExposedFilesError` when its SQLite database can be
    read or written by other users (its home and database are created private:
    :func:`~pedl.master._private.prepare_home`).
    """
    _configure_process()
    prepare_home(settings)
    reads = settings.read_process_count
    read_processes = ReadProcesses(settings, reads) if reads else None
    if read_processes is not None:
        read_processes.prefork()  # before any thread, file or connection of the master's
    master_log = MasterLog()  # from the first line on: `pedl master logs` shows the start
    master_log.attach()
    for path in remove_dead_owners_dirs():
        logger.info("removed %s, left by a master that is gone", path)
    family = socket.AF_INET6 if ":" in settings.host else socket.AF_INET
    try:
        sock = socket.create_server((settings.host, settings.port), family=family, backlog=2048)
    except OSError as err:
        raise ListenError(settings.host, settings.port, err) from err
    # Accepted connections inherit TCP_NODELAY from the listening socket (Linux). asyncio sets
    # it only on sockets whose proto is IPPROTO_TCP, and create_server's sockets have proto 0:
    # without this, a response written as headers then body waits ~40 ms for the client's
    # delayed ACK (Nagle), on every keep-alive request.
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    port = sock.getsockname()[1]
    url = master_url(settings.host, port)
    trials_url = settings.advertised_url or url
    # Nothing the master starts (trials, read processes) inherits the admin's password.
    os.environ.pop(ADMIN_PASSWORD_ENV, None)
    database = make_database(settings)
    generated = prepare_accounts(database, settings)
    if generated is not None:
        announce_password(generated)
    if not settings.auth:
        logger.warning(NO_AUTH_WARNING)
    orchestrator = Orchestrator(database, settings, master_url=trials_url)
    app = create_app(
        settings,
        database=database,
        orchestrator=orchestrator,
        reads=read_processes,
        master_log=master_log,
    )
    if trials_url != url:
        logger.info("trials reach the master at %s (advertised_url)", trials_url)
    logger.info(
        "PEDL master listening on %s (%d slots; %d database connections, %d worker threads; "
        "%d read processes)",
        url,
        orchestrator.total_slots,
        settings.db_connections,
        settings.worker_threads,
        reads,
    )
    server = _Server(
        uvicorn.Config(
            app,
            log_level="warning",
            lifespan="on",
            timeout_graceful_shutdown=10,
            access_log=False,
            proxy_headers=False,
            # Longer than clients keep idle connections (httpx: 5 s), so a client never sends
            # a request on a connection the master is closing at that moment.
            timeout_keep_alive=KEEP_ALIVE_S,
        )
    )
    try:
        server.run(sockets=[sock])
    finally:
        database.dispose()


def serve_reads(settings: MasterSettings, socket_path: str) -> None:
    """Run one of the master's read processes (:class:`ReadProcesses`): the API's database
    reads on the Unix socket ``socket_path``, until standard input reaches end-of-file (the
    master stopped it, or died) or SIGINT/SIGTERM. Its pool and worker threads are sized
    from ``settings`` like the master's."""
    prepare_reads(settings)(socket_path)


def prepare_reads(settings: MasterSettings) -> Callable[[str], None]:
    """What :func:`serve_reads` does before it serves: the read process's app, built with
    its route table and OpenAPI schema (which its startup would build), and no connection
    opened; returns the function that serves it on a socket's path. A read process forked
    by the master prepares while the master starts, and serves once told where."""
    _configure_process()
    database = make_database(settings)
    app = create_app(settings, database=database, reads_only=True)
    app.openapi()

    def serve_on(socket_path: str) -> None:
        server = _Server(
            uvicorn.Config(
                app,
                uds=socket_path,
                log_level="warning",
                lifespan="on",
                timeout_graceful_shutdown=10,
                access_log=False,
                # The master keeps connections to it open; it closes them itself.
                timeout_keep_alive=24 * 3600,
            )
        )

        def exit_with_the_master() -> None:
            sys.stdin.buffer.read()  # returns at end-of-file only
            server.should_exit = True

        threading.Thread(target=exit_with_the_master, name="pedl-master-watch", daemon=True).start()
        try:
            server.run()
        finally:
            database.dispose()

    return serve_on


def _configure_process() -> None:
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    # The event loop shares the GIL with the worker threads (reads) and the metric writer.
    # A thread that wants the GIL waits up to the switch interval (5 ms by default) for a
    # CPU-bound holder: the event loop, which gives it up at every system call, paid that
    # several times per request. 0.5 ms measured better in P5b (bench/RESULTS.md).
    sys.setswitchinterval(float(os.environ.get("PEDL_SWITCH_INTERVAL", "0.0005")))
