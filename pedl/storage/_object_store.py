"""What the object-store backends (S3, GCS, Azure Blob) share: Determined's layout plus a
manifest written last, so that a checkpoint appears atomically and a torn upload is never one.

Layout, for checkpoint ``id`` under ``prefix`` (Determined's, for S3, GCS and Azure alike):
its files are the objects ``<prefix>/<id>/<relative path>``, and the manifest
``<prefix>/<id>.pedl-manifest.json`` lists every file with its size and every directory. The
manifest is written after every file and deleted first: a checkpoint exists exactly when its
manifest does. Files are streamed from and to disk (never read whole into memory).
"""

from __future__ import annotations

import abc
import contextlib
import json
import shutil
import tempfile
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

from pedl.storage._base import StorageManager, check_storage_id, list_resources

MANIFEST_SUFFIX = ".pedl-manifest.json"
MANIFEST_FORMAT = 1


class ObjectStorage(StorageManager):
    """A checkpoint store over a flat namespace of objects; subclasses give the primitives.

    The primitives raise :class:`FileNotFoundError` for a missing object where said, and
    are safe to call from several threads.
    """

    def __init__(self, scheme: str, root: str, prefix: str | None) -> None:
        self._scheme = scheme  # for people: gs, az
        self._root = root  # the bucket or container
        self.prefix = (prefix or "").strip("/")

    # primitives ------------------------------------------------------------------------

    @abc.abstractmethod
    def _put_file(self, key: str, path: Path) -> None:
        """Upload ``path`` as object ``key``, streamed (memory bounded by a chunk size)."""

    @abc.abstractmethod
    def _put_bytes(self, key: str, data: bytes) -> None: ...

    @abc.abstractmethod
    def _get_bytes(self, key: str) -> bytes:
        """Object ``key``'s contents; FileNotFoundError when there is none."""

    @abc.abstractmethod
    def _get_file(self, key: str, path: Path) -> None:
        """Download object ``key`` into ``path``, streamed; FileNotFoundError when none."""

    @abc.abstractmethod
    def _list(self, prefix: str) -> Iterator[tuple[str, datetime]]:
        """Every object whose key starts with ``prefix``: its key and when it was written."""

    @abc.abstractmethod
    def _delete_keys(self, keys: list[str]) -> None:
        """Delete these objects; one that is already gone is not an error."""

    @abc.abstractmethod
    def _has(self, key: str) -> bool: ...

    # keys ------------------------------------------------------------------------------

    def _key(self, *parts: str) -> str:
        return "/".join([self.prefix, *parts] if self.prefix else parts)

    def _manifest_key(self, storage_id: str) -> str:
        check_storage_id(storage_id)
        return self._key(storage_id + MANIFEST_SUFFIX)

    def _url(self, key: str) -> str:
        return f"{self._scheme}://{self._root}/{key}"

    def location(self, storage_id: str) -> str:
        check_storage_id(storage_id)
        return self._url(self._key(storage_id)) + "/"

    # the contract ----------------------------------------------------------------------

    @contextlib.contextmanager
    def store_path(self, storage_id: str) -> Iterator[Path]:
        if self.exists(storage_id):
            raise FileExistsError(
                f"checkpoint {storage_id} already exists at {self.location(storage_id)}"
            )
        tmp = Path(tempfile.mkdtemp(prefix=f"pedl-{self._scheme}-store-{storage_id}-"))
        try:
            yield tmp
            self._upload(storage_id, tmp)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

    def _upload(self, storage_id: str, directory: Path) -> None:
        """Every file in path order, then the manifest. A failed upload leaves no manifest and
        removes what it wrote (best effort: a killed process cannot; see
        :meth:`delete_torn_uploads`)."""
        files = list_resources(directory)
        manifest = {
            "format": MANIFEST_FORMAT,
            "files": files,
            "directories": _directories(directory),
        }
        try:
            for relpath in files:
                self._put_file(self._key(storage_id, relpath), directory / relpath)
            self._put_bytes(
                self._manifest_key(storage_id), json.dumps(manifest, sort_keys=True).encode()
            )
        except BaseException:
            with contextlib.suppress(Exception):
                self.delete(storage_id)
            raise

    @contextlib.contextmanager
    def restore_path(self, storage_id: str) -> Iterator[Path]:
        manifest = self._manifest(storage_id)
        tmp = Path(tempfile.mkdtemp(prefix=f"pedl-{self._scheme}-restore-{storage_id}-"))
        try:
            for relpath in manifest["directories"]:
                (tmp / relpath).mkdir(parents=True, exist_ok=True)
            for relpath, size in manifest["files"].items():
                self._download(storage_id, relpath, int(size), tmp)
            yield tmp
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

    def _manifest(self, storage_id: str) -> dict[str, Any]:
        key = self._manifest_key(storage_id)
        try:
            body = self._get_bytes(key)
        except FileNotFoundError as err:
            raise FileNotFoundError(
                f"no checkpoint {storage_id} in {self._url(self.prefix)}"
            ) from err
        manifest = json.loads(body)
        if not isinstance(manifest, dict) or manifest.get("format") != MANIFEST_FORMAT:
            raise OSError(f"checkpoint {storage_id}: {self._url(key)} is not a manifest")
        return manifest

    def _download(self, storage_id: str, relpath: str, size: int, directory: Path) -> None:
        """One file of the manifest, refused unless it has the manifest's size."""
        target = directory / relpath
        if not target.resolve().is_relative_to(directory.resolve()):
            raise OSError(f"checkpoint {storage_id}: the manifest names {relpath!r}, outside it")
        target.parent.mkdir(parents=True, exist_ok=True)
        key = self._key(storage_id, relpath)
        try:
            if size == 0:  # nothing to fetch (and some emulators answer empty ranges wrongly)
                if not self._has(key):
                    raise FileNotFoundError(key)
                target.touch()
            else:
                self._get_file(key, target)
        except FileNotFoundError as err:
            raise FileNotFoundError(f"checkpoint {storage_id}: {self._url(key)} is gone") from err
        got = target.stat().st_size
        if got != size:
            raise OSError(
                f"checkpoint {storage_id}: {self._url(key)} has {got} bytes, its manifest "
                f"says {size}"
            )

    def delete(self, storage_id: str) -> None:
        """The manifest first (the checkpoint is gone at once), then every object under
        ``<prefix>/<id>/``, including those of a torn upload."""
        self._delete_keys([self._manifest_key(storage_id)])
        self._delete_keys([key for key, _ in self._list(self._key(storage_id, ""))])

    def exists(self, storage_id: str) -> bool:
        return self._has(self._manifest_key(storage_id))

    def delete_torn_uploads(self, older_than: float) -> list[str]:
        """Delete the objects of every upload that has no manifest and wrote nothing for
        ``older_than`` seconds (a process killed mid-upload); the ids, sorted."""
        root = self._key("")
        newest: dict[str, float] = {}
        manifests: set[str] = set()
        for key, written in self._list(root):
            rest = key[len(root) :]
            if "/" not in rest:
                if rest.endswith(MANIFEST_SUFFIX):
                    manifests.add(rest[: -len(MANIFEST_SUFFIX)])
                continue
            storage_id = rest.split("/", 1)[0]
            newest[storage_id] = max(newest.get(storage_id, 0.0), written.timestamp())
        cutoff = time.time() - older_than
        torn = sorted(
            sid
            for sid, when in newest.items()
            if sid not in manifests and when <= cutoff and _valid(sid)
        )
        for storage_id in torn:
            self._delete_keys([key for key, _ in self._list(self._key(storage_id, ""))])
        return torn


def _valid(storage_id: str) -> bool:
    try:
        check_storage_id(storage_id)
    except ValueError:
        return False
    return True


def _directories(directory: Path) -> list[str]:
    """Every directory under ``directory`` (relative POSIX paths): object stores have none,
    so a restore recreates the empty ones from the manifest."""
    return sorted(
        path.relative_to(directory).as_posix() for path in directory.rglob("*") if path.is_dir()
    )
