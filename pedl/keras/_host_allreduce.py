"""Averages of float32 vectors over the workers of one machine, through shared memory.

Where every worker of a multi-worker Keras trial runs on one machine (Linux, Keras 3), the
controller averages each step's gradients with :class:`HostAllReduce` instead of
``MultiWorkerMirroredStrategy``'s ring over gRPC (which costs 1.7 to 3.5 ms a step on
loopback, as long as the whole step of a small model: ``bench/p7_breakdown.py``).

Each worker owns one slot of a memory-mapped file that every worker maps: two buffers of
``capacity`` float32 values, used by turns (step ``k`` writes buffer ``k % 2``). A step
writes this worker's vector into its buffer, tells every other worker so with a datagram on
a Unix socket (the kernel's send and receive order the memory writes before the reads), waits
for the same word from each of them, and sums the slots in rank order: every worker computes
the same sum from the same values in the same order, so all get the same bits, and a run is
as reproducible as on one worker. A worker cannot overwrite a buffer that another still
reads: it writes buffer ``k % 2`` again at step ``k + 2``, after every worker's word of step
``k + 1``, which each sends only once it has read step ``k``.

A worker that waits longer than the distributed context's timeout, or finds that another
worker's process has exited, raises :class:`HostAllReduceError` instead of waiting forever.
"""

from __future__ import annotations

import mmap
import os
import socket
import struct
import sys
import tempfile
import time
import uuid
from collections.abc import Sequence
from typing import Any

import numpy as np

from pedl import core

_WORD = struct.Struct("<iq")
"""A step's word: the sender's rank and the step's number."""
_POLL_S = 1.0
"""How often a waiting worker checks that the others' processes still live."""


class HostAllReduceError(RuntimeError):
    """The workers' averages cannot go on: a worker exited or timed out."""


def usable(distributed: core.DistributedContext) -> bool:
    """Whether the trial's workers can average through this machine's shared memory: all on
    this machine (``local_size == size``), on Linux (abstract Unix sockets), and
    ``PEDL_HOST_ALLREDUCE`` not ``0`` (``0`` keeps ``MultiWorkerMirroredStrategy``'s)."""
    return (
        distributed.size > 1
        and distributed.local_size == distributed.size
        and sys.platform == "linux"
        and os.environ.get("PEDL_HOST_ALLREDUCE", "1") != "0"
    )


class HostAllReduce:
    """The average of a float32 vector of up to ``capacity`` values over the trial's
    workers (see the module docstring). Every worker makes one, with the same capacity, at
    the same point of its run (the making is itself a collective), and calls :meth:`mean`
    equally often."""

    def __init__(self, distributed: core.DistributedContext, capacity: int) -> None:
        self._rank = rank = distributed.rank
        self._size = size = distributed.size
        self._timeout = distributed.timeout
        self._capacity = capacity = max(int(capacity), 1)
        nbytes = size * 2 * capacity * 4
        made: tuple[str, str] | str | None = None
        if distributed.is_chief:
            made = _make_file(nbytes)
        made = distributed.broadcast(made)
        if isinstance(made, str):  # the chief could not: every worker says why
            raise HostAllReduceError(made)
        assert made is not None
        name, token = made
        fd = os.open(name, os.O_RDWR)
        try:
            self._map = mmap.mmap(fd, nbytes)
        finally:
            os.close(fd)
        self._slots = np.frombuffer(self._map, dtype=np.float32).reshape(size, 2, capacity)
        self._addresses = [f"\0pedl-allreduce-{token}-{r}" for r in range(size)]
        self._socket = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self._socket.bind(self._addresses[rank])
        # Every worker has mapped the file and bound its socket once all have answered.
        self._pids: list[int] = distributed.allgather(os.getpid())
        if distributed.is_chief:
            os.unlink(name)  # the mappings keep it; nothing is left behind on a crash
        self._step = 0
        self._seen = [0] * size
        self._seen[rank] = 2**62

    def mean(self, values: np.ndarray) -> np.ndarray:
        """The mean of ``values`` (float32, at most ``capacity`` of them, the same length on
        every worker) over the workers: the same bits on each."""
        flat = np.asarray(values, dtype=np.float32).reshape(-1)
        n = flat.size
        if n > self._capacity:
            raise ValueError(f"{n} values for an all-reduce of capacity {self._capacity}")
        self._step += 1
        step, buffer = self._step, self._step % 2
        self._slots[self._rank, buffer, :n] = flat
        word = _WORD.pack(self._rank, step)
        for peer, address in enumerate(self._addresses):
            if peer != self._rank:
                try:
                    self._socket.sendto(word, address)
                except OSError:  # its socket is gone: say so if the process is too
                    self._check_peers(step)
                    raise
        self._wait_for(step)
        out = self._slots[0, buffer, :n].copy()
        for peer in range(1, self._size):
            out += self._slots[peer, buffer, :n]
        out /= np.float32(self._size)
        return out

    def _wait_for(self, step: int) -> None:
        deadline = None if self._timeout is None else time.monotonic() + self._timeout
        while min(self._seen) < step:
            wait = _POLL_S if deadline is None else min(_POLL_S, deadline - time.monotonic())
            if wait <= 0:
                raise HostAllReduceError(
                    f"worker {self._rank} waited {self._timeout:g} s for the other workers' "
                    f"gradients of step {step} (the distributed timeout, PEDL_DIST_TIMEOUT)"
                )
            self._socket.settimeout(wait)
            try:
                data = self._socket.recv(_WORD.size)
            except TimeoutError:
                self._check_peers(step)
                continue
            peer, peer_step = _WORD.unpack(data)
            self._seen[peer] = peer_step

    def _check_peers(self, step: int) -> None:
        for peer, pid in enumerate(self._pids):
            if peer == self._rank or self._seen[peer] >= step:
                continue
            if not _alive(pid):
                raise HostAllReduceError(
                    f"worker {peer} (process {pid}) exited while worker {self._rank} waited "
                    f"for its gradients of step {step}"
                )


def _alive(pid: int) -> bool:
    """Whether process ``pid`` still runs: it exists and is not a zombie (exited, not yet
    reaped by its parent)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            state = f.read().rsplit(b")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False
    return state not in (b"Z", b"X")


def _make_file(nbytes: int, places: list[str] | None = None) -> tuple[str, str] | str:
    """A file of ``nbytes`` for the slots, its space reserved (a mapping of a file whose
    space ran out would kill the process with SIGBUS), and a token for the sockets' names:
    in ``/dev/shm`` (memory) where it has the room, else in the temporary directory (the
    page cache). Where neither has the room, why, for every worker to raise."""
    if places is None:
        places = [p for p in ("/dev/shm", tempfile.gettempdir()) if os.access(p, os.W_OK)]
    for place in places:
        fd, name = tempfile.mkstemp(prefix="pedl-allreduce-", dir=place)
        try:
            os.posix_fallocate(fd, 0, nbytes)
        except OSError:
            os.unlink(name)
            continue
        finally:
            os.close(fd)
        return name, uuid.uuid4().hex
    return (
        f"no room for the workers' gradient all-reduce ({nbytes / 2**20:.1f} MiB) in "
        f"{' or '.join(places) or 'a writable /dev/shm or temporary directory'}: free some, or "
        "set PEDL_HOST_ALLREDUCE=0 to average through MultiWorkerMirroredStrategy instead"
    )


def average_gradients(allreduce: HostAllReduce, grads: list[Any]) -> list[Any]:
    """``grads`` (TensorFlow tensors, ``None`` for a variable without one) averaged over the
    workers inside a TensorFlow function: one all-reduce of all of them as one float32
    vector, each cast back to its own dtype and shape."""
    import tensorflow as tf

    present = [i for i, g in enumerate(grads) if g is not None]
    if not present:
        return grads
    tensors = [tf.convert_to_tensor(grads[i]) for i in present]
    sizes = [int(np.prod(t.shape)) for t in tensors]
    flat = tf.concat([tf.reshape(tf.cast(t, tf.float32), [-1]) for t in tensors], axis=0)
    (mean,) = tf.numpy_function(allreduce.mean, [flat], [tf.float32], stateful=True)
    mean.set_shape(flat.shape)
    out = list(grads)
    for i, part, t in zip(present, tf.split(mean, sizes), tensors, strict=True):
        out[i] = tf.cast(tf.reshape(part, t.shape), t.dtype)
    return out


def average_before_applying(
    optimizer: Any, allreduce: HostAllReduce, states: Sequence[Any] = ()
) -> None:
    """Make ``optimizer`` average its gradients over the workers before applying them, as
    Horovod's ``DistributedOptimizer`` does: its ``apply``, which ``apply_gradients`` (so
    Keras's ``train_step``, and a custom one) calls, gets the average of every worker's.

    ``states`` (the model's non-trainable float variables: a batch normalization's moving
    statistics) are averaged in the same all-reduce and set to the average, so that every
    worker's copy stays the chief's, as under a strategy; their step's updates, made in the
    forward pass, come before the optimizer's ``apply``."""
    apply = optimizer.apply
    states = list(states)

    def averaged_apply(grads: Any, trainable_variables: Any = None) -> Any:
        grads = list(grads)
        averaged = average_gradients(allreduce, grads + [v.value for v in states])
        for v, value in zip(states, averaged[len(grads) :], strict=True):
            v.assign(value)
        return apply(averaged[: len(grads)], trainable_variables)

    object.__setattr__(optimizer, "apply", averaged_apply)
