"""The chief-and-workers channel under :class:`pedl.core.DistributedContext`, over ZeroMQ.

One group of workers (the whole trial, or the workers of one machine) talks through a star:
its chief runs a :class:`Hub`, every other worker a :class:`Spoke`.

- The hub binds a PUB socket (one message to every spoke: broadcast) and a PULL socket (one
  message from each spoke: gather). Each spoke connects a SUB socket to the PUB and a PUSH
  socket to the PULL. PUB never blocks when spokes are gone, so a chief whose workers died
  cannot hang in a broadcast.
- Startup handshake (:meth:`Hub.start` / :meth:`Spoke.start`): a SUB socket misses what a PUB
  sent before the subscription reached it (ZeroMQ's "slow joiner"), so the hub publishes a
  hello every 50 ms until every spoke, having received one, answered with a hello of its own
  (naming its id: a rank, or a local rank) over PUSH; then the hub publishes "go". After that
  every spoke is subscribed and nothing published is lost.
- Messages are pickled Python objects with a serial number each way, checked on receipt, so
  a lost or out-of-order message is an error, never a silent mix-up.
- Dead peers: each side watches its connections through ZeroMQ's socket monitor (and ZMTP
  heartbeats, which drop a connection to a machine that stopped answering). When a peer's
  connection closes while a receive is waiting (a worker process exited or crashed, the
  chief's process exited), the receive raises :class:`DistributedError` at once. Whatever
  else keeps a peer from answering (a hung process, workers calling different collectives)
  ends in a :class:`DistributedError` when the timeout passes.

Not thread-safe: one thread uses a hub or a spoke. Anyone who can reach the hub's ports can
send it pickles, so the ports must only be reachable inside the trial's network.
"""

from __future__ import annotations

import pickle
import time
from collections.abc import Callable, Iterable
from typing import Any

import zmq
from zmq.utils.monitor import recv_monitor_message

_HELLO = "hello"
_GO = "go"
_MSG = "msg"

# A handshake hello every 50 ms; ZMTP heartbeats every 10 s, and a connection whose peer did
# not answer one for 60 s is dropped (the ZeroMQ I/O thread answers them, not Python code, so
# a busy worker still answers).
_HELLO_INTERVAL_MS = 50
_HEARTBEAT_IVL_MS = 10_000
_HEARTBEAT_TIMEOUT_MS = 60_000
# How long closing waits for messages still queued to live peers.
_MAX_LINGER_MS = 10_000


class DistributedError(RuntimeError):
    """A collective between a trial's workers failed: a peer's connection was lost, a peer did
    not answer within the timeout, or a message came out of order."""


def _dumps(obj: Any) -> bytes:
    return pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)


def _deadline(timeout: float | None) -> float | None:
    return None if timeout is None else time.monotonic() + timeout


def _configure(socket: zmq.Socket[bytes], timeout: float | None, *, linger: bool = False) -> None:
    """Options for every socket; ``linger``: closing waits (up to the timeout, at most 10 s)
    for queued messages to reach live peers. Only the hub's PUB needs it: whatever a spoke
    sends is answered before the next collective, so nothing of its is pending at close."""
    wait = _MAX_LINGER_MS if timeout is None else min(_MAX_LINGER_MS, int(timeout * 1000))
    socket.setsockopt(zmq.LINGER, wait if linger else 0)
    socket.setsockopt(zmq.SNDHWM, 0)  # no message is ever dropped for a slow reader
    socket.setsockopt(zmq.RCVHWM, 0)
    socket.setsockopt(zmq.HEARTBEAT_IVL, _HEARTBEAT_IVL_MS)
    socket.setsockopt(zmq.HEARTBEAT_TIMEOUT, _HEARTBEAT_TIMEOUT_MS)


class _Connections:
    """The live connections of one socket, followed through its monitor.

    ``lost`` turns true, for good, when fewer than ``expected`` connections remain once armed
    (after the handshake, when every expected peer had connected): a peer that reconnects has
    missed what was published meanwhile. A stray connection (a port scan) only adds one, so
    it never counts as a peer lost. With one ZeroMQ I/O thread a connection's "accepted" or
    "connected" event is queued before any of its messages, so draining the events after a
    message arrived counts its connection.
    """

    def __init__(self, socket: zmq.Socket[bytes], expected: int) -> None:
        self._socket = socket
        self.monitor = socket.get_monitor_socket(
            zmq.EVENT_ACCEPTED | zmq.EVENT_CONNECTED | zmq.EVENT_DISCONNECTED
        )
        self._expected = expected
        self._live: set[int] = set()
        self._armed = False
        self.lost = False

    def drain(self) -> None:
        while True:
            try:
                event = recv_monitor_message(self.monitor, zmq.NOBLOCK)
            except zmq.Again:
                return
            kind, fd = event["event"], event["value"]
            if kind in (zmq.EVENT_ACCEPTED, zmq.EVENT_CONNECTED):
                self._live.add(fd)
            elif kind == zmq.EVENT_DISCONNECTED:
                self._live.discard(fd)
                self._check()

    def arm(self) -> None:
        self.drain()
        self._armed = True
        self._check()

    def _check(self) -> None:
        if self._armed and len(self._live) < self._expected:
            self.lost = True

    def close(self) -> None:
        self._socket.disable_monitor()
        self.monitor.close(linger=0)


class _Endpoint:
    """What a hub and a spoke share: waiting on a socket for a deadline or a lost peer."""

    def __init__(self, name: str, timeout: float | None) -> None:
        self.name = name
        self.timeout = timeout
        self._sockets: list[zmq.Socket[bytes]] = []
        self._connections: _Connections | None = None

    def _wait(
        self,
        socket: zmq.Socket[bytes],
        flag: int,
        deadline: float | None,
        lost_message: Callable[[], str],
        timeout_message: Callable[[], str],
    ) -> None:
        """Return once ``socket`` is ready for ``flag``; raise DistributedError when the peer's
        connection is lost (and nothing is ready) or at the deadline."""
        connections = self._connections
        assert connections is not None
        poller = zmq.Poller()
        poller.register(socket, flag)
        poller.register(connections.monitor, zmq.POLLIN)
        while True:
            if socket.poll(0, flag):
                return
            connections.drain()
            if connections.lost:
                if socket.poll(0, flag):  # what the peer sent before it went
                    return
                raise DistributedError(f"{self.name}: {lost_message()}")
            if deadline is None:
                poller.poll()
                continue
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise DistributedError(f"{self.name}: {timeout_message()}")
            poller.poll(max(1, int(remaining * 1000)))

    def _timed_out(self, what: str) -> str:
        return (
            f"{what} within {self.timeout:g} s (the DistributedContext's timeout): a worker "
            "is stuck, or the workers did not call the same collectives in the same order"
        )

    def close(self) -> None:
        if self._connections is not None:
            self._connections.close()
            self._connections = None
        for socket in self._sockets:
            socket.close()
        self._sockets = []


class Hub(_Endpoint):
    """The chief's end of a group: binds ``pub_url`` and ``pull_url`` (a ``tcp://host:*`` or
    ``ipc://`` address; :attr:`pub_url` and :attr:`pull_url` are the bound ones) for the
    spokes whose ids are ``spokes``."""

    def __init__(
        self,
        context: zmq.Context[zmq.Socket[bytes]],
        *,
        spokes: Iterable[int],
        pub_url: str,
        pull_url: str,
        timeout: float | None,
        name: str,
        id_name: str = "rank",
    ) -> None:
        super().__init__(name, timeout)
        self._spokes = frozenset(spokes)
        self._id_name = id_name
        self._pub = context.socket(zmq.PUB)
        self._pull = context.socket(zmq.PULL)
        self._sockets = [self._pub, self._pull]
        # The monitor comes before the bind: a spoke already retrying its connect may be
        # accepted the moment the port opens, and an "accepted" event sent before the monitor
        # existed is never seen (its peer would count as lost once armed).
        self._connections = _Connections(self._pull, expected=len(self._spokes))
        for socket, url in ((self._pub, pub_url), (self._pull, pull_url)):
            _configure(socket, timeout, linger=socket is self._pub)
            try:
                socket.bind(url)
            except zmq.ZMQError as e:
                self.close()
                raise DistributedError(
                    f"{name}: cannot listen on {url}: {e} (is another trial's chief using "
                    "this port on this machine? Give each trial its own port_offset)"
                ) from e
        self.pub_url = self._pub.getsockopt_string(zmq.LAST_ENDPOINT)
        self.pull_url = self._pull.getsockopt_string(zmq.LAST_ENDPOINT)
        self._send_serial = 0
        self._recv_serial = 0

    def _ids(self, ids: Iterable[int]) -> str:
        return f"{self._id_name}(s) {', '.join(str(i) for i in sorted(ids))}"

    def start(self) -> None:
        """Wait until every spoke is connected and subscribed (see the module docstring)."""
        deadline = _deadline(self.timeout)
        waiting = set(self._spokes)
        hello = _dumps((_HELLO,))
        while waiting:
            self._pub.send(hello)
            if self._pull.poll(_HELLO_INTERVAL_MS):
                message = pickle.loads(self._pull.recv())
                if message[0] != _HELLO:
                    raise DistributedError(f"{self.name}: expected a hello, got {message[0]!r}")
                ident = message[1]
                if ident not in waiting:
                    raise DistributedError(
                        f"{self.name}: a second worker (or an unexpected one) says it is "
                        f"{self._id_name} {ident}; expected {self._ids(self._spokes)} once each"
                    )
                waiting.discard(ident)
            elif deadline is not None and time.monotonic() > deadline:
                raise DistributedError(
                    f"{self.name}: {self._ids(waiting)} did not connect to {self.pull_url} "
                    f"within {self.timeout:g} s (the DistributedContext's timeout)"
                )
        self._pub.send(_dumps((_GO,)))
        assert self._connections is not None
        self._connections.arm()

    def broadcast(self, obj: Any) -> None:
        """Send ``obj`` to every spoke."""
        self._pub.send(_dumps((_MSG, self._send_serial, obj)))
        self._send_serial += 1

    def gather(self) -> dict[int, Any]:
        """One object from each spoke (what it :meth:`Spoke.send` next), by spoke id."""
        deadline = _deadline(self.timeout)
        got: dict[int, Any] = {}

        def missing() -> str:
            return self._ids(self._spokes - got.keys())

        while len(got) < len(self._spokes):
            self._wait(
                self._pull,
                zmq.POLLIN,
                deadline,
                lambda: (
                    f"lost the connection to a worker (its process exited, or its machine "
                    f"stopped answering) while waiting for {missing()}"
                ),
                lambda: self._timed_out(f"no message from {missing()}"),
            )
            kind, serial, ident, payload = pickle.loads(self._pull.recv(zmq.NOBLOCK))
            if kind != _MSG or serial != self._recv_serial or ident not in self._spokes:
                raise DistributedError(
                    f"{self.name}: out-of-order message {(kind, serial)} from {self._id_name} "
                    f"{ident} (expected message {self._recv_serial})"
                )
            if ident in got:
                raise DistributedError(f"{self.name}: two messages from {self._id_name} {ident}")
            got[ident] = payload
        self._recv_serial += 1
        return got


class Spoke(_Endpoint):
    """A worker's end of a group: connects to a hub's ``pub_url`` and ``pull_url`` as spoke
    ``ident``."""

    def __init__(
        self,
        context: zmq.Context[zmq.Socket[bytes]],
        *,
        ident: int,
        pub_url: str,
        pull_url: str,
        timeout: float | None,
        name: str,
    ) -> None:
        super().__init__(name, timeout)
        self._ident = ident
        self._pub_url = pub_url
        self._sub = context.socket(zmq.SUB)
        self._push = context.socket(zmq.PUSH)
        self._sockets = [self._sub, self._push]
        for socket in self._sockets:
            _configure(socket, timeout)
        self._sub.setsockopt(zmq.SUBSCRIBE, b"")
        self._connections = _Connections(self._sub, expected=1)
        self._sub.connect(pub_url)
        self._push.connect(pull_url)
        self._send_serial = 0
        self._recv_serial = 0

    def _lost(self) -> str:
        return (
            f"lost the connection to its chief at {self._pub_url} (the chief's process "
            "exited, or its machine stopped answering)"
        )

    def _recv_raw(self, deadline: float | None, what: str) -> tuple[Any, ...]:
        self._wait(
            self._sub,
            zmq.POLLIN,
            deadline,
            self._lost,
            lambda: self._timed_out(f"{what} from the chief at {self._pub_url}"),
        )
        message: tuple[Any, ...] = pickle.loads(self._sub.recv(zmq.NOBLOCK))
        return message

    def start(self) -> None:
        """Answer the hub's handshake (see the module docstring)."""
        deadline = _deadline(self.timeout)
        message = self._recv_raw(deadline, "no answer")
        if message[0] != _HELLO:
            raise DistributedError(f"{self.name}: expected a hello, got {message[0]!r}")
        self.send_raw((_HELLO, self._ident), deadline)
        while message[0] != _GO:
            message = self._recv_raw(deadline, "no go-ahead")
            if message[0] not in (_HELLO, _GO):
                raise DistributedError(f"{self.name}: expected a hello, got {message[0]!r}")
        assert self._connections is not None
        self._connections.arm()

    def send_raw(self, message: tuple[Any, ...], deadline: float | None) -> None:
        data = _dumps(message)
        while True:
            try:
                self._push.send(data, zmq.NOBLOCK)
                return
            except zmq.Again:
                pass
            self._wait(
                self._push,
                zmq.POLLOUT,
                deadline,
                self._lost,
                lambda: self._timed_out("could not send to the chief"),
            )

    def send(self, obj: Any) -> None:
        """Send ``obj`` to the hub (for its next :meth:`Hub.gather`)."""
        self.send_raw((_MSG, self._send_serial, self._ident, obj), _deadline(self.timeout))
        self._send_serial += 1

    def recv(self) -> Any:
        """The hub's next :meth:`Hub.broadcast`."""
        kind, serial, payload = self._recv_raw(_deadline(self.timeout), "no message")
        if kind != _MSG or serial != self._recv_serial:
            raise DistributedError(
                f"{self.name}: out-of-order message {(kind, serial)} from the chief "
                f"(expected message {self._recv_serial})"
            )
        self._recv_serial += 1
        return payload
