"""Rank information and small collective operations between the workers of one trial.

Addresses and ports (the contract a launcher keeps):

- The chief (``rank == 0``) listens on ``pub_port + port_offset`` (broadcasts) and
  ``pull_port + port_offset`` (gathers); every other worker connects to them at ``chief_ip``.
  Defaults 12360 and 12376, Determined's. When the trial spans several machines
  (``cross_size > 1``) the chief listens on every interface (on 127.0.0.1 only where
  ``chief_ip`` is a loopback address) and ``chief_ip`` is required; on one machine it listens
  on 127.0.0.1 only and the workers connect there. Two trials whose
  chiefs share a machine need different ``port_offset`` values.
- On each machine with several workers, the worker with ``local_rank == 0`` is the local
  chief, with its own pair of sockets for the ``_local`` collectives: Unix sockets in a
  private temporary directory, or, with ``force_tcp`` (or where a Unix socket path would be
  too long), two free TCP ports on 127.0.0.1. Their addresses reach the machine's workers
  through one allgather of the whole trial while connecting. On one machine the ``_local``
  collectives are the trial's own.
- A launcher starts each worker with the variables of :meth:`DistributedContext.to_env` (for
  instance ``PEDL_RANK``, ``PEDL_SIZE``, ``PEDL_CHIEF_IP``, ``PEDL_PORT_OFFSET``), and the
  worker builds its context with :meth:`DistributedContext.from_env`.

The transport is ZeroMQ (see :mod:`pedl.core._zmq_transport`); objects travel pickled.
"""

from __future__ import annotations

import os
import shutil
import socket
import tempfile
import weakref
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import zmq

from pedl.core._zmq_transport import DistributedError, Hub, Spoke

if TYPE_CHECKING:
    pass

DEFAULT_PUB_PORT = 12360
DEFAULT_PULL_PORT = 12376
DEFAULT_TIMEOUT = 1800.0
"""Seconds a collective (or the startup handshake) waits for its peers by default."""

# The variables of to_env() / from_env().
ENV_RANK = "PEDL_RANK"
ENV_SIZE = "PEDL_SIZE"
ENV_LOCAL_RANK = "PEDL_LOCAL_RANK"
ENV_LOCAL_SIZE = "PEDL_LOCAL_SIZE"
ENV_CROSS_RANK = "PEDL_CROSS_RANK"
ENV_CROSS_SIZE = "PEDL_CROSS_SIZE"
ENV_CHIEF_IP = "PEDL_CHIEF_IP"
ENV_PUB_PORT = "PEDL_PUB_PORT"
ENV_PULL_PORT = "PEDL_PULL_PORT"
ENV_PORT_OFFSET = "PEDL_PORT_OFFSET"
ENV_FORCE_TCP = "PEDL_FORCE_TCP"
ENV_TIMEOUT = "PEDL_DIST_TIMEOUT"
# Determined's launchers give the chief's address in this one.
DET_CHIEF_IP = "DET_CHIEF_IP"

# A Unix socket path longer than this does not fit sockaddr_un on every platform.
_MAX_IPC_PATH = 100

_Group = Hub | Spoke


def _env_int(environ: Mapping[str, str], name: str, source: str) -> int:
    try:
        return int(environ[name])
    except KeyError:
        hint = (
            ""
            if source.endswith("from_env()")
            else ": that framework's launcher sets it; in a PEDL trial, whose launcher sets "
            "PEDL_RANK, PEDL_SIZE, ..., use DistributedContext.from_env(), or build the context "
            "from det.get_cluster_info() as Determined's Core API tutorial does"
        )
        raise ValueError(f"{source} needs the environment variable {name}{hint}") from None
    except ValueError:
        raise ValueError(f"{source}: {name}={environ[name]!r} is not an integer") from None


def _port(given: int | None, name: str, default: int) -> int:
    if given is not None:
        return given
    text = os.environ.get(name, "")
    return int(text) if text.isdigit() else default


def _is_loopback(host: str | None) -> bool:
    return host == "localhost" or (host or "").startswith("127.")


def _chief_ip(chief_ip: str | None, environ: Mapping[str, str]) -> str | None:
    return chief_ip or environ.get(ENV_CHIEF_IP) or environ.get(DET_CHIEF_IP) or None


class DistributedContext:
    """Who this worker is within its trial, and gather / allgather / broadcast between workers.

    - ``rank``, ``size``: this worker's index in the trial, and the number of workers.
    - ``local_rank``, ``local_size``: the same within this machine.
    - ``cross_rank``, ``cross_size``: this machine's index in the trial, and the number of
      machines. The chief (rank 0) is local rank 0 on machine 0.
    - ``chief_ip``: the address of the chief's machine; required when ``cross_size > 1``.
    - ``pub_port``, ``pull_port``, ``port_offset``, ``force_tcp``: where the workers talk (see
      the module docstring). A port or offset not given is the ``PEDL_PUB_PORT``,
      ``PEDL_PULL_PORT`` or ``PEDL_PORT_OFFSET`` variable where set (inside a PEDL trial: the
      ports PEDL chose for the trial, so that the contexts a script's own launcher builds,
      as Determined's Core API tutorial does, meet there), else Determined's defaults.
    - ``timeout``: seconds a collective waits for the other workers before it raises
      :class:`DistributedError` (None: forever). A peer whose process exits, or whose machine
      stops answering ZeroMQ's heartbeats for a minute, fails a waiting collective at once
      instead. The first collective also waits this long for every worker to connect.

    The collective methods are for coordinating the workers (agreeing on a path, sharing a
    small result), not a replacement for the training framework's own collectives. Every
    worker must call the same collectives in the same order (the ``_local`` ones: every worker
    of the machine), from one thread. With ``size == 1`` every collective is the identity and
    no socket is opened. Otherwise the connections are made by :meth:`connect`, or by the first
    collective, so building a context is cheap; :meth:`close` (or a ``with`` block) closes them.
    """

    def __init__(
        self,
        *,
        rank: int = 0,
        size: int = 1,
        local_rank: int = 0,
        local_size: int = 1,
        cross_rank: int = 0,
        cross_size: int = 1,
        chief_ip: str | None = None,
        pub_port: int | None = None,
        pull_port: int | None = None,
        port_offset: int | None = None,
        force_tcp: bool = False,
        timeout: float | None = DEFAULT_TIMEOUT,
    ) -> None:
        # Not given: the trial's (a script's own launcher builds its workers' contexts in
        # processes that inherit the trial's variables), else Determined's defaults.
        pub_port = _port(pub_port, ENV_PUB_PORT, DEFAULT_PUB_PORT)
        pull_port = _port(pull_port, ENV_PULL_PORT, DEFAULT_PULL_PORT)
        port_offset = _port(port_offset, ENV_PORT_OFFSET, 0)
        if not 0 <= rank < size:
            raise ValueError(f"rank must be in [0, size): rank={rank}, size={size}")
        if not 0 <= local_rank < local_size:
            raise ValueError(
                f"local_rank must be in [0, local_size): local_rank={local_rank}, "
                f"local_size={local_size}"
            )
        if not 0 <= cross_rank < cross_size:
            raise ValueError(
                f"cross_rank must be in [0, cross_size): cross_rank={cross_rank}, "
                f"cross_size={cross_size}"
            )
        if cross_size > 1 and not chief_ip:
            raise ValueError("chief_ip is required when the trial spans several machines")
        if local_size > size or cross_size > size:
            raise ValueError(
                f"local_size and cross_size cannot exceed size: size={size}, "
                f"local_size={local_size}, cross_size={cross_size}"
            )
        if cross_size == 1 and (local_size, local_rank) != (size, rank):
            raise ValueError(
                "on one machine (cross_size 1) local_size must equal size and local_rank rank"
            )
        if rank == 0 and (local_rank, cross_rank) != (0, 0):
            raise ValueError("the chief (rank 0) must be local_rank 0 on machine cross_rank 0")
        for name, port in (("pub_port", pub_port), ("pull_port", pull_port)):
            if not 0 < port + port_offset < 65536:
                raise ValueError(f"{name} + port_offset must be a TCP port: {port + port_offset}")
        if pub_port + port_offset == pull_port + port_offset:
            raise ValueError("pub_port and pull_port must differ")
        if timeout is not None and timeout <= 0:
            raise ValueError(f"timeout must be positive (or None): {timeout}")
        self.rank = rank
        self.size = size
        self.local_rank = local_rank
        self.local_size = local_size
        self.cross_rank = cross_rank
        self.cross_size = cross_size
        self.chief_ip = chief_ip
        self.pub_port = pub_port
        self.pull_port = pull_port
        self.port_offset = port_offset
        self.force_tcp = force_tcp
        self.timeout = timeout
        self._resources: _Resources | None = None
        self._release: weakref.finalize[[], DistributedContext] | None = None
        self._global: _Group | None = None
        self._local: _Group | None = None
        self._connected = False
        self._closed = False

    # Constructors.

    @classmethod
    def single(cls) -> DistributedContext:
        """The context of a trial that runs in one process."""
        return cls()

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> DistributedContext:
        """The context a launcher described in the environment (:meth:`to_env`'s variables);
        without ``PEDL_SIZE``, :meth:`single`."""
        env = os.environ if environ is None else environ
        if ENV_SIZE not in env:
            return cls.single()
        source = "DistributedContext.from_env()"
        timeout_text = env.get(ENV_TIMEOUT, "")
        timeout = (
            DEFAULT_TIMEOUT
            if not timeout_text
            else None
            if timeout_text == "none"
            else float(timeout_text)
        )
        return cls(
            rank=_env_int(env, ENV_RANK, source),
            size=_env_int(env, ENV_SIZE, source),
            local_rank=_env_int(env, ENV_LOCAL_RANK, source),
            local_size=_env_int(env, ENV_LOCAL_SIZE, source),
            cross_rank=_env_int(env, ENV_CROSS_RANK, source),
            cross_size=_env_int(env, ENV_CROSS_SIZE, source),
            chief_ip=env.get(ENV_CHIEF_IP) or None,
            pub_port=int(env.get(ENV_PUB_PORT, DEFAULT_PUB_PORT)),
            pull_port=int(env.get(ENV_PULL_PORT, DEFAULT_PULL_PORT)),
            port_offset=int(env.get(ENV_PORT_OFFSET, 0)),
            force_tcp=env.get(ENV_FORCE_TCP, "") == "1",
            timeout=timeout,
        )

    def to_env(self) -> dict[str, str]:
        """The environment variables from which :meth:`from_env` builds this context in
        another process (what a launcher gives each worker it starts)."""
        env = {
            ENV_RANK: str(self.rank),
            ENV_SIZE: str(self.size),
            ENV_LOCAL_RANK: str(self.local_rank),
            ENV_LOCAL_SIZE: str(self.local_size),
            ENV_CROSS_RANK: str(self.cross_rank),
            ENV_CROSS_SIZE: str(self.cross_size),
            ENV_PUB_PORT: str(self.pub_port),
            ENV_PULL_PORT: str(self.pull_port),
            ENV_PORT_OFFSET: str(self.port_offset),
            ENV_FORCE_TCP: "1" if self.force_tcp else "0",
            ENV_TIMEOUT: "none" if self.timeout is None else repr(float(self.timeout)),
        }
        if self.chief_ip:
            env[ENV_CHIEF_IP] = self.chief_ip
        return env

    @classmethod
    def from_horovod(cls, hvd: Any, chief_ip: str | None = None) -> DistributedContext:
        """The context of a Horovod worker, from the ``hvd`` module (after ``hvd.init()``).

        The chief's address (needed when ``hvd.cross_size() > 1``) is ``chief_ip``, else the
        ``PEDL_CHIEF_IP`` or ``DET_CHIEF_IP`` environment variable.
        """
        return cls(
            rank=hvd.rank(),
            size=hvd.size(),
            local_rank=hvd.local_rank(),
            local_size=hvd.local_size(),
            cross_rank=hvd.cross_rank(),
            cross_size=hvd.cross_size(),
            chief_ip=_chief_ip(chief_ip, os.environ),
        )

    @classmethod
    def from_deepspeed(cls, chief_ip: str | None = None) -> DistributedContext:
        """The context of a worker started by the DeepSpeed launcher, from its variables
        ``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``, ``LOCAL_SIZE``, ``CROSS_RANK`` and
        ``CROSS_SIZE``. The chief's address as in :meth:`from_horovod`."""
        env, source = os.environ, "DistributedContext.from_deepspeed()"
        return cls(
            rank=_env_int(env, "RANK", source),
            size=_env_int(env, "WORLD_SIZE", source),
            local_rank=_env_int(env, "LOCAL_RANK", source),
            local_size=_env_int(env, "LOCAL_SIZE", source),
            cross_rank=_env_int(env, "CROSS_RANK", source),
            cross_size=_env_int(env, "CROSS_SIZE", source),
            chief_ip=_chief_ip(chief_ip, env),
        )

    @classmethod
    def from_torch_distributed(cls, chief_ip: str | None = None) -> DistributedContext:
        """The context of a worker started by ``torchrun`` (torch.distributed), from its
        variables ``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``, ``LOCAL_WORLD_SIZE``,
        ``GROUP_RANK`` and ``GROUP_WORLD_SIZE``. The chief's address as in
        :meth:`from_horovod`."""
        env, source = os.environ, "DistributedContext.from_torch_distributed()"
        return cls(
            rank=_env_int(env, "RANK", source),
            size=_env_int(env, "WORLD_SIZE", source),
            local_rank=_env_int(env, "LOCAL_RANK", source),
            local_size=_env_int(env, "LOCAL_WORLD_SIZE", source),
            cross_rank=_env_int(env, "GROUP_RANK", source),
            cross_size=_env_int(env, "GROUP_WORLD_SIZE", source),
            chief_ip=_chief_ip(chief_ip, env),
        )

    # Rank information.

    def get_rank(self) -> int:
        """This worker's index in the trial (unique within the trial)."""
        return self.rank

    def get_size(self) -> int:
        """The number of workers (slots) of the trial."""
        return self.size

    def get_local_rank(self) -> int:
        """This worker's index on its machine (unique within the machine)."""
        return self.local_rank

    def get_local_size(self) -> int:
        """The number of workers of the trial on this machine."""
        return self.local_size

    def get_cross_rank(self) -> int:
        """This machine's index in the trial."""
        return self.cross_rank

    def get_cross_size(self) -> int:
        """The number of machines (agents) of the trial."""
        return self.cross_size

    def get_num_agents(self) -> int:
        """The number of machines (agents) of the trial."""
        return self.cross_size

    @property
    def is_chief(self) -> bool:
        return self.rank == 0

    @property
    def is_local_chief(self) -> bool:
        return self.local_rank == 0

    # Collectives.

    def gather(self, stuff: Any) -> list[Any] | None:
        """The chief gets a list of every worker's ``stuff`` (in rank order); others get None."""
        return self._gather(stuff, local=False)

    def gather_local(self, stuff: Any) -> list[Any] | None:
        """The local chief gets a list of the ``stuff`` of every worker on this machine (in
        local rank order); others get None."""
        return self._gather(stuff, local=True)

    def allgather(self, stuff: Any) -> list[Any]:
        """Every worker gets the list of every worker's ``stuff``, in rank order."""
        return self._allgather(stuff, local=False)

    def allgather_local(self, stuff: Any) -> list[Any]:
        """Every worker on this machine gets the list of their ``stuff``, in local rank
        order."""
        return self._allgather(stuff, local=True)

    def broadcast(self, stuff: Any) -> Any:
        """Every worker gets the chief's ``stuff``."""
        return self._broadcast(stuff, local=False)

    def broadcast_local(self, stuff: Any = None) -> Any:
        """Every worker on this machine gets the local chief's ``stuff``."""
        return self._broadcast(stuff, local=True)

    def _gather(self, stuff: Any, *, local: bool) -> list[Any] | None:
        group = self._group(local)
        if group is None:
            return [stuff]
        if isinstance(group, Hub):
            gathered = _in_order(stuff, group.gather())
            group.broadcast(None)  # no worker sends for the next gather before this one ends
            return gathered
        group.send(stuff)
        group.recv()
        return None

    def _allgather(self, stuff: Any, *, local: bool) -> list[Any]:
        group = self._group(local)
        if group is None:
            return [stuff]
        return _allgather_in(group, stuff)

    def _broadcast(self, stuff: Any, *, local: bool) -> Any:
        group = self._group(local)
        if group is None:
            return stuff
        if isinstance(group, Hub):
            group.broadcast(stuff)
            return stuff
        return group.recv()

    # Connections.

    def _group(self, local: bool) -> _Group | None:
        """The hub or spoke of the trial (or of this machine); None when alone in it."""
        self.connect()
        return self._local if local else self._global

    def connect(self) -> None:
        """Connect to the other workers now (waiting up to the timeout for all of them); the
        first collective does it otherwise. Every worker of the trial must connect, as every
        worker calls every collective. Does nothing with ``size == 1``, or when connected."""
        if self._connected:
            return
        if self._closed:
            raise DistributedError("this DistributedContext is closed")
        if self.size == 1:
            self._connected = True
            return
        self._resources = _Resources()
        # Closed by close(), else when garbage-collected or when the interpreter exits (so a
        # chief that exits without close() still delivers its last broadcast).
        self._release = weakref.finalize(self, self._resources.release)
        try:
            self._connect()
        except BaseException:
            self.close()
            raise
        self._connected = True

    def _connect(self) -> None:
        assert self._resources is not None
        context = self._resources.zmq
        host = self.chief_ip if self.cross_size > 1 else "127.0.0.1"
        # Several machines: every interface; "machines" that are all this one (a script's own
        # launcher, each worker process a container of its own, the chief at 127.0.0.1):
        # loopback only, as on one machine.
        remote = self.cross_size > 1 and not _is_loopback(self.chief_ip)
        bind_host = "*" if remote else "127.0.0.1"
        pub, pull = self.pub_port + self.port_offset, self.pull_port + self.port_offset
        name = f"DistributedContext rank {self.rank}"
        if self.is_chief:
            self._global = Hub(
                context,
                spokes=range(1, self.size),
                pub_url=f"tcp://{bind_host}:{pub}",
                pull_url=f"tcp://{bind_host}:{pull}",
                timeout=self.timeout,
                name=name,
            )
        else:
            self._global = Spoke(
                context,
                ident=self.rank,
                pub_url=f"tcp://{host}:{pub}",
                pull_url=f"tcp://{host}:{pull}",
                timeout=self.timeout,
                name=name,
            )
        self._global.start()

        if self.cross_size == 1:  # the machine's workers are the trial's
            self._local = self._global
        elif self.local_size == 1:  # alone on this machine; the others still exchange urls
            _allgather_in(self._global, None)
        elif self.is_local_chief:
            pub_url, pull_url = self._local_urls()
            hub = Hub(
                context,
                spokes=range(1, self.local_size),
                pub_url=pub_url,
                pull_url=pull_url,
                timeout=self.timeout,
                name=f"{name} (local chief of machine {self.cross_rank})",
                id_name="local rank",
            )
            self._local = hub
            _allgather_in(self._global, (self.cross_rank, hub.pub_url, hub.pull_url))
            hub.start()
        else:
            urls = [u for u in _allgather_in(self._global, None) if u and u[0] == self.cross_rank]
            if len(urls) != 1:
                raise DistributedError(
                    f"{name}: machine {self.cross_rank} has {len(urls)} local chiefs, not 1 "
                    "(are local_rank and cross_rank right?)"
                )
            _, pub_url, pull_url = urls[0]
            self._local = Spoke(
                context,
                ident=self.local_rank,
                pub_url=pub_url,
                pull_url=pull_url,
                timeout=self.timeout,
                name=f"{name} (local rank {self.local_rank} of machine {self.cross_rank})",
            )
            self._local.start()

    def _local_urls(self) -> tuple[str, str]:
        assert self._resources is not None
        if hasattr(socket, "AF_UNIX") and not self.force_tcp:
            tempdir = self._resources.tempdir = tempfile.mkdtemp(prefix="pedl-dist-")
            pub = os.path.join(tempdir, "pub")
            if len(pub) <= _MAX_IPC_PATH:
                return f"ipc://{pub}", f"ipc://{os.path.join(tempdir, 'pull')}"
        return "tcp://127.0.0.1:*", "tcp://127.0.0.1:*"

    def close(self) -> None:
        """Close the connections (idempotent). Collectives of a closed context with
        ``size > 1`` raise :class:`DistributedError`."""
        self._closed = True
        self._connected = self._connected and self.size == 1
        for group in (self._local, self._global):
            if group is not None:
                group.close()
        self._local = self._global = None
        if self._release is not None:
            self._release()
            self._release = self._resources = None

    def __enter__(self) -> DistributedContext:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return (
            f"DistributedContext(rank={self.rank}, size={self.size}, "
            f"local_rank={self.local_rank}, local_size={self.local_size}, "
            f"cross_rank={self.cross_rank}, cross_size={self.cross_size})"
        )


class _Resources:
    """The ZeroMQ context (its sockets) and the Unix sockets' directory of a connected
    context."""

    def __init__(self) -> None:
        self.zmq: zmq.Context[zmq.Socket[bytes]] = zmq.Context()
        self.tempdir: str | None = None

    def release(self) -> None:
        self.zmq.destroy()  # closes any socket still open (a failed connect()'s), then ends
        if self.tempdir is not None:
            shutil.rmtree(self.tempdir, ignore_errors=True)
            self.tempdir = None


def _in_order(own: Any, others: Mapping[int, Any]) -> list[Any]:
    return [own, *(others[ident] for ident in sorted(others))]


def _allgather_in(group: _Group, stuff: Any) -> list[Any]:
    if isinstance(group, Hub):
        gathered = _in_order(stuff, group.gather())
        group.broadcast(gathered)
        return gathered
    group.send(stuff)
    everything: list[Any] = group.recv()
    return everything
