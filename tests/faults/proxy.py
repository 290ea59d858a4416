"""A TCP proxy that can cut the line: trial processes reach the master (or the S3 server)
through it, and the test makes the master unreachable for them (while the master itself keeps
running), or acts when a chosen request passes."""

from __future__ import annotations

import contextlib
import socket
import struct
import threading
from collections.abc import Callable

Inspector = Callable[[bytes], bool]
"""Called with each chunk a client sends (after the last 512 bytes before it, so that a
request line cut between chunks is seen whole); ``True`` cuts that connection, the chunk
not passed on."""


class Proxy:
    """Forwards connections from a loopback port to ``127.0.0.1:target_port``.

    :meth:`go_dark` cuts every open connection and from then on resets each new one as soon
    as it is accepted (the client sees its connection refused or reset), until
    :meth:`light_up`. ``inspect`` (see :data:`Inspector`) sees what clients send. Use as a
    context manager.
    """

    def __init__(self, target_port: int, inspect: Inspector | None = None) -> None:
        self._target_port = target_port
        self._inspect = inspect
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._listener.getsockname()[1]
        self._lock = threading.Lock()
        self._open: set[socket.socket] = set()
        self._dark = False
        self.refused = 0
        """Connections reset while dark."""
        self._thread = threading.Thread(target=self._accept, name="dark-proxy", daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> Proxy:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        _reset(self._listener)  # shutting it down wakes the thread blocked in accept()
        self.go_dark()
        self._thread.join(5)

    def go_dark(self) -> None:
        with self._lock:
            self._dark = True
            sockets, self._open = list(self._open), set()
        for sock in sockets:
            _reset(sock)

    def light_up(self) -> None:
        with self._lock:
            self._dark = False

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            with self._lock:
                dark = self._dark
                if dark:
                    self.refused += 1
            if dark:
                _reset(client)
                continue
            try:
                upstream = socket.create_connection(("127.0.0.1", self._target_port))
            except OSError:
                _reset(client)
                continue
            with self._lock:
                self._open.update((client, upstream))
            ways = ((client, upstream, self._inspect), (upstream, client, None))
            for source, sink, inspect in ways:
                threading.Thread(
                    target=self._pump, args=(source, sink, inspect), daemon=True
                ).start()

    def _pump(self, source: socket.socket, sink: socket.socket, inspect: Inspector | None) -> None:
        tail = b""
        try:
            while data := source.recv(65536):
                if inspect is not None:
                    window, tail = tail + data, (tail + data)[-512:]
                    if inspect(window):
                        break
                sink.sendall(data)
        except OSError:
            pass
        with self._lock:
            self._open.difference_update((source, sink))
        for sock in (source, sink):
            _reset(sock)


def _reset(sock: socket.socket) -> None:
    """Cut ``sock``: shut it down (which wakes a thread blocked reading it) and close it with
    a TCP reset (SO_LINGER 0), as a dropped line looks to its peer."""
    for step in (
        lambda: sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0)),
        lambda: sock.shutdown(socket.SHUT_RDWR),
        sock.close,
    ):
        with contextlib.suppress(OSError):
            step()
