"""Request-and-answer links between the processes of one trial on one machine.

Two places need one: local mode's run process answers a multi-worker trial's chief
(:mod:`pedl.local._chief_link`), and a Core API trial's process answers the processes its
script starts (:mod:`pedl.script._core_link`, :mod:`pedl.core._link`). Both are this:

- :class:`LinkServer` listens on a Unix socket in a private temporary directory (mode 0700)
  with a random 32-byte authkey (a peer without it is refused by
  :mod:`multiprocessing.connection`'s handshake), gives each connected process a thread (the
  handshake runs there, so a peer that never answers it holds up nobody), and runs the calls
  of all of them one at a time, each by the handler of its name; a handler that raises is
  answered with its type and message (and logged), never ending the link. A connection that
  fails the handshake is closed at once.
- :class:`LinkClient` connects from the two environment variables the server's :meth:`env
  <LinkServer.env>` gives, and makes each call one request and one answer, raising
  :class:`LinkError` for a call the server could not carry out.
"""

from __future__ import annotations

import contextlib
import logging
import os
import secrets
import shutil
import socket
import tempfile
import threading
from collections.abc import Callable, Mapping, MutableMapping
from multiprocessing import AuthenticationError
from multiprocessing.connection import Connection, answer_challenge, deliver_challenge
from typing import Any

#: How long :meth:`LinkServer.close` waits for its accepting thread, and the wake-up
#: connection for the socket, in seconds.
_CLOSE_TIMEOUT_S = 10.0


class LinkError(RuntimeError):
    """The other end of a link could not carry out a call (or cannot be reached)."""


class LinkServer:
    """Serves ``handlers`` to the processes that connect, until :meth:`close`.

    ``address_env`` and ``key_env`` are the names of the variables :attr:`env` fills for
    the processes that connect; ``name`` names the serving threads and the socket's directory;
    ``logger`` gets the failed calls."""

    def __init__(
        self,
        handlers: Mapping[str, Callable[..., Any]],
        *,
        address_env: str,
        key_env: str,
        name: str,
        logger: logging.Logger,
    ) -> None:
        self._handlers = dict(handlers)
        self._env_names = (address_env, key_env)
        self._name = name
        self._logger = logger
        self._directory = tempfile.mkdtemp(prefix=f"{name}-")
        self._address = os.path.join(self._directory, "link.sock")
        self._authkey = secrets.token_bytes(32)
        self._listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._listener.bind(self._address)
        self._listener.listen()
        self._calls = threading.Lock()
        self._closed = threading.Event()
        self._thread = threading.Thread(target=self._serve, name=name, daemon=True)
        self._thread.start()

    @property
    def env(self) -> dict[str, str]:
        """The variables a process needs to connect (socket path, authkey in hex)."""
        address_env, key_env = self._env_names
        return {address_env: self._address, key_env: self._authkey.hex()}

    @property
    def lock(self) -> threading.Lock:
        """Held while a call runs: take it to act between calls (e.g. at close)."""
        return self._calls

    def close(self) -> None:
        """Stop taking connections and remove the socket (calls under way finish)."""
        self._closed.set()
        with contextlib.suppress(OSError), socket.socket(socket.AF_UNIX) as wake:
            wake.settimeout(_CLOSE_TIMEOUT_S)  # a bare connection wakes accept, no handshake
            wake.connect(self._address)
        self._thread.join(timeout=_CLOSE_TIMEOUT_S)
        self._listener.close()
        shutil.rmtree(self._directory, ignore_errors=True)

    def _serve(self) -> None:
        while not self._closed.is_set():
            try:
                peer, _ = self._listener.accept()
            except OSError:
                continue
            if self._closed.is_set():
                peer.close()
                return
            threading.Thread(
                target=self._answer,
                args=(Connection(peer.detach()),),
                name=f"{self._name}-peer",
                daemon=True,
            ).start()

    def _answer(self, connection: Connection) -> None:
        with connection:
            try:
                deliver_challenge(connection, self._authkey)
                answer_challenge(connection, self._authkey)
            except Exception:  # a peer without the key, or one that hung up at once
                return
            while True:
                try:
                    name, args = connection.recv()
                except Exception:  # the process ended (EOF) or sent what cannot be read
                    return
                try:
                    with self._calls:
                        reply: tuple[str, Any] = ("ok", self._handlers[name](*args))
                except Exception as error:
                    self._logger.exception("a linked process's call %s failed", name)
                    reply = ("error", f"{name}: {type(error).__name__}: {error}")
                try:
                    connection.send(reply)
                except OSError:
                    return


class LinkClient:
    """A connected process's end of a :class:`LinkServer`; ``peer`` says who answers, for
    errors ("the trial's process")."""

    def __init__(self, connection: Connection, peer: str) -> None:
        self._connection = connection
        self._peer = peer
        self._lock = threading.Lock()

    @classmethod
    def connect(
        cls,
        environ: MutableMapping[str, str] | Mapping[str, str],
        *,
        address_env: str,
        key_env: str,
        peer: str,
        pop: bool = False,
    ) -> LinkClient | None:
        """Connect to the link ``environ`` names, or None when it names none; ``pop``
        removes both variables from ``environ`` (so the key goes no further). Raises
        :class:`LinkError` when it names one that cannot be reached."""
        if pop:
            assert isinstance(environ, MutableMapping)
            address, key = environ.pop(address_env, None), environ.pop(key_env, None)
        else:
            address, key = environ.get(address_env), environ.get(key_env)
        if not address or not key:
            return None
        try:
            connection = _connect(address, bytes.fromhex(key))
        except (OSError, ValueError, EOFError, AuthenticationError) as err:
            raise LinkError(
                f"this process was started to report to {peer} ({address_env}={address}) "
                f"but cannot reach it: {err}"
            ) from err
        return cls(connection, peer)

    def call(self, name: str, *args: Any) -> Any:
        """Run the server's handler ``name`` with ``args`` there and return its answer."""
        with self._lock:
            self._connection.send((name, args))
            status, value = self._connection.recv()
        if status != "ok":
            raise LinkError(f"{self._peer} could not carry out {value}")
        return value

    def close(self) -> None:
        self._connection.close()


def _connect(address: str, authkey: bytes) -> Connection:
    """A connection to the server at ``address`` that passed the handshake (closed when it
    did not: :func:`multiprocessing.connection.Client` would leave it open)."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.connect(address)
        connection = Connection(sock.detach())
    try:
        answer_challenge(connection, authkey)
        deliver_challenge(connection, authkey)
    except BaseException:
        connection.close()
        raise
    return connection
