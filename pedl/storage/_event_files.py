"""A trial's TensorBoard event files, carried through its checkpoint storage to the master.

The trial process writes event files (the user's ``TensorBoard`` callback, or any writer) in
its TensorBoard directory; they only grow. :class:`EventFileUploader` stores, now and then,
what was appended since its last upload as one *snapshot*: an entry of the storage (the same
atomic ``store_path`` as a checkpoint, so a killed upload leaves no snapshot and its torn
objects are collected like a checkpoint's) named :func:`snapshot_id` ``(trial, n)`` for
n = 0, 1, 2, ... It holds each grown file's new bytes under ``data/<relative path>`` and
:data:`MANIFEST` (``{"files": {relative path: offset}}``). :class:`EventFileDownloader` (in
the master) applies the snapshots in order to a local copy: each chunk written at its
offset, so applying one twice, or a restarted attempt uploading a file again from offset 0,
leaves the same bytes. The snapshots are never registered as checkpoints: retention does
not see them; deleting the experiment removes them (:func:`delete_snapshots`).
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path, PurePosixPath

from pedl.storage._base import StorageManager

logger = logging.getLogger("pedl.storage")

MANIFEST = "pedl-tensorboard.json"
MAX_SNAPSHOT_BYTES = 64 * 1024 * 1024
"""At most this many new bytes per snapshot (the rest goes in the next)."""
MAX_FILES = 1000
"""At most this many files of a trial's TensorBoard directory are carried."""


def snapshot_id(trial_id: int, index: int) -> str:
    """The storage id of trial ``trial_id``'s ``index``-th snapshot."""
    return f"tensorboard-trial-{trial_id}-{index:08d}"


def first_free_snapshot(storage: StorageManager, trial_id: int) -> int:
    """The index of the trial's next snapshot (snapshots are stored 0, 1, 2, ...; a
    restarted attempt goes on after the last one): exponential probe, then binary search."""
    if not storage.exists(snapshot_id(trial_id, 0)):
        return 0
    high = 1
    while storage.exists(snapshot_id(trial_id, high)):
        high *= 2
    low = high // 2  # low exists, high does not
    while high - low > 1:
        middle = (low + high) // 2
        if storage.exists(snapshot_id(trial_id, middle)):
            low = middle
        else:
            high = middle
    return high


def delete_snapshots(storage: StorageManager, trial_id: int) -> int:
    """Delete every snapshot of trial ``trial_id``'s event files; how many there were."""
    count = first_free_snapshot(storage, trial_id)
    for index in range(count):
        storage.delete(snapshot_id(trial_id, index))
    return count


class EventFileUploader:
    """Uploads what was appended to the files under ``directory`` (trial side)."""

    def __init__(self, storage: StorageManager, trial_id: int, directory: Path) -> None:
        self.storage = storage
        self.trial_id = trial_id
        self.directory = directory
        self.sent: dict[str, int] = {}
        self.next_index: int | None = None

    def upload(self) -> int:
        """Store one snapshot of the bytes appended since the last one; returns how many
        bytes it holds (0: nothing new, nothing stored)."""
        grown = self._grown()
        if not grown:
            return 0
        if self.next_index is None:
            self.next_index = first_free_snapshot(self.storage, self.trial_id)
        budget = MAX_SNAPSHOT_BYTES
        offsets: dict[str, int] = {}
        sizes: dict[str, int] = {}
        with self.storage.store_path(snapshot_id(self.trial_id, self.next_index)) as target:
            for relative, (offset, size) in grown.items():
                length = min(size - offset, budget)
                if length <= 0:
                    break
                with (self.directory / relative).open("rb") as source:
                    source.seek(offset)
                    chunk = source.read(length)
                path = target / "data" / relative
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_bytes(chunk)
                offsets[relative] = offset
                sizes[relative] = offset + len(chunk)
                budget -= len(chunk)
            (target / MANIFEST).write_text(json.dumps({"files": offsets}))
        self.next_index += 1
        self.sent.update(sizes)
        return sum(sizes[r] - offsets[r] for r in offsets)

    def _grown(self) -> dict[str, tuple[int, int]]:
        """``{relative path: (bytes sent, size now)}`` of the files that grew."""
        grown: dict[str, tuple[int, int]] = {}
        if not self.directory.is_dir():
            return grown
        seen = 0
        for root, _dirs, files in os.walk(self.directory):
            for name in sorted(files):
                seen += 1
                if seen > MAX_FILES:
                    return grown
                path = Path(root) / name
                relative = path.relative_to(self.directory).as_posix()
                try:
                    size = path.stat().st_size
                except OSError:
                    continue
                if size > self.sent.get(relative, 0):
                    grown[relative] = (self.sent.get(relative, 0), size)
        return grown


class EventFileDownloader:
    """Applies a trial's snapshots, in order, to ``target`` (master side)."""

    def __init__(self, storage: StorageManager, trial_id: int, target: Path) -> None:
        self.storage = storage
        self.trial_id = trial_id
        self.target = target
        self.next_index = 0

    def download(self) -> int:
        """Apply every snapshot stored since the last call; returns how many. A snapshot
        that names a path outside the directory is skipped whole (logged)."""
        applied = 0
        while self.storage.exists(snapshot_id(self.trial_id, self.next_index)):
            storage_id = snapshot_id(self.trial_id, self.next_index)
            with self.storage.restore_path(storage_id) as path:
                files = json.loads((path / MANIFEST).read_text())["files"]
                unsafe = [r for r in files if not _inside(r)]
                if unsafe:
                    logger.warning(
                        "%s: paths outside the directory, skipped: %s", storage_id, unsafe
                    )
                else:
                    for relative, offset in files.items():
                        self._apply(relative, int(offset), (path / "data" / relative).read_bytes())
            self.next_index += 1
            applied += 1
        return applied

    def _apply(self, relative: str, offset: int, chunk: bytes) -> None:
        destination = self.target / relative
        destination.parent.mkdir(parents=True, exist_ok=True)
        with open(destination, "r+b" if destination.exists() else "wb") as out:
            out.seek(offset)
            out.write(chunk)


def _inside(relative: str) -> bool:
    """Whether ``relative`` names a file inside a directory (no root, no ``..``)."""
    path = PurePosixPath(relative)
    return (
        bool(relative)
        and not path.is_absolute()
        and ".." not in path.parts
        and "\\" not in relative
    )
