"""Checkpoints in an S3 bucket (or an S3-compatible server through ``endpoint_url``).

Layout, for checkpoint ``id`` under ``prefix``: its files are the objects
``<prefix>/<id>/<relative path>`` (as Determined lays them out), and a manifest object
``<prefix>/<id>.pedl-manifest.json`` lists every file with its size. The manifest is written
last, after every file is uploaded, and deleted first: a checkpoint exists exactly when its
manifest does. A process killed in the middle of an upload leaves objects without a manifest,
which are not a checkpoint (``exists`` is false, ``restore_path`` raises FileNotFoundError).

boto3 is an optional dependency (``pip install 'pedl[s3]'``), imported when an
:class:`S3Storage` is made: importing it costs about a third of a second, which the CLI and
every shared_fs user would otherwise pay.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import json
import os
import shutil
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pedl.storage._base import (
    StorageManager,
    UnsupportedStorageError,
    check_storage_id,
    list_resources,
)

MISSING_BOTO3 = (
    "checkpoint_storage.type 's3' needs boto3, which is not installed: pip install 'pedl[s3]'"
)
MANIFEST_SUFFIX = ".pedl-manifest.json"
MANIFEST_FORMAT = 1
_DELETE_BATCH = 1000  # the most keys one DeleteObjects request takes
_MISSING_CODES = frozenset({"404", "NoSuchKey", "NotFound"})  # S3's "no such object"


def s3_unavailable_reason() -> str | None:
    """Why S3 storage cannot be used in this Python environment (boto3 is missing), or
    ``None``; looks for the package without importing it."""
    return MISSING_BOTO3 if importlib.util.find_spec("boto3") is None else None


class S3Storage(StorageManager):
    """Checkpoints as objects under ``s3://<bucket>/<prefix>/``.

    Credentials are ``access_key`` and ``secret_key`` when both are given, else boto3's usual
    chain (environment variables, shared config files, the instance's role). One boto3 client
    serves every thread (boto3 clients are thread-safe; each call uses its own temporary
    directory, so distinct ids never interfere).
    """

    def __init__(
        self,
        bucket: str,
        prefix: str | None = None,
        *,
        access_key: str | None = None,
        secret_key: str | None = None,
        endpoint_url: str | None = None,
    ) -> None:
        if s3_unavailable_reason() is not None:
            raise UnsupportedStorageError(MISSING_BOTO3)
        self.bucket = bucket
        self.prefix = (prefix or "").strip("/")
        keys = (access_key, secret_key) if access_key and secret_key else None
        self._client = _client(keys, endpoint_url or None)

    # keys ------------------------------------------------------------------------------

    def _key(self, *parts: str) -> str:
        return "/".join([self.prefix, *parts] if self.prefix else parts)

    def _manifest_key(self, storage_id: str) -> str:
        check_storage_id(storage_id)
        return self._key(storage_id + MANIFEST_SUFFIX)

    def location(self, storage_id: str) -> str:
        """Where checkpoint ``storage_id``'s files are, as an ``s3://`` URL."""
        check_storage_id(storage_id)
        return f"s3://{self.bucket}/{self._key(storage_id)}/"

    # the contract ----------------------------------------------------------------------

    @contextlib.contextmanager
    def store_path(self, storage_id: str) -> Iterator[Path]:
        if self.exists(storage_id):
            raise FileExistsError(
                f"checkpoint {storage_id} already exists at {self.location(storage_id)}"
            )
        tmp = Path(tempfile.mkdtemp(prefix=f"pedl-s3-store-{storage_id}-"))
        try:
            yield tmp
            self._upload(storage_id, tmp)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

    def _upload(self, storage_id: str, directory: Path) -> None:
        """Every file, one after another in path order, then the manifest. An upload that
        fails leaves no manifest; the objects already written are removed (best effort: a
        killed process cannot, and its objects are never read as a checkpoint)."""
        files = list_resources(directory)
        manifest = {
            "format": MANIFEST_FORMAT,
            "files": files,
            "directories": _directories(directory),
        }
        try:
            for relpath in files:
                self._client.upload_file(
                    str(directory / relpath), self.bucket, self._key(storage_id, relpath)
                )
            self._client.put_object(
                Bucket=self.bucket,
                Key=self._manifest_key(storage_id),
                Body=json.dumps(manifest, sort_keys=True).encode(),
                ContentType="application/json",
            )
        except BaseException:
            with contextlib.suppress(Exception):
                self.delete(storage_id)
            raise

    @contextlib.contextmanager
    def restore_path(self, storage_id: str) -> Iterator[Path]:
        manifest = self._manifest(storage_id)
        tmp = Path(tempfile.mkdtemp(prefix=f"pedl-s3-restore-{storage_id}-"))
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
            body = self._client.get_object(Bucket=self.bucket, Key=key)["Body"].read()
        except Exception as err:
            if _is_missing(err):
                raise FileNotFoundError(
                    f"no checkpoint {storage_id} in s3://{self.bucket}/{self.prefix}"
                ) from err
            raise
        manifest = json.loads(body)
        if not isinstance(manifest, dict) or manifest.get("format") != MANIFEST_FORMAT:
            raise OSError(f"checkpoint {storage_id}: s3://{self.bucket}/{key} is not a manifest")
        return manifest

    def _download(self, storage_id: str, relpath: str, size: int, directory: Path) -> None:
        """One file of the manifest into ``directory``, refused unless it has the manifest's
        size (a file replaced or cut short in the bucket is never used)."""
        target = directory / relpath
        if not target.resolve().is_relative_to(directory.resolve()):
            raise OSError(f"checkpoint {storage_id}: the manifest names {relpath!r}, outside it")
        target.parent.mkdir(parents=True, exist_ok=True)
        key = self._key(storage_id, relpath)
        try:
            self._client.download_file(self.bucket, key, str(target))
        except Exception as err:
            if _is_missing(err):
                raise FileNotFoundError(
                    f"checkpoint {storage_id}: s3://{self.bucket}/{key} is gone"
                ) from err
            raise
        got = target.stat().st_size
        if got != size:
            raise OSError(
                f"checkpoint {storage_id}: s3://{self.bucket}/{key} has {got} bytes, its "
                f"manifest says {size}"
            )

    def delete(self, storage_id: str) -> None:
        """The manifest first (so the checkpoint is gone at once), then every object under
        ``<prefix>/<id>/``, including those of a torn upload."""
        self._client.delete_object(Bucket=self.bucket, Key=self._manifest_key(storage_id))
        paginator = self._client.get_paginator("list_objects_v2")
        keys = [
            item["Key"]
            for page in paginator.paginate(Bucket=self.bucket, Prefix=self._key(storage_id, ""))
            for item in page.get("Contents", [])
        ]
        for start in range(0, len(keys), _DELETE_BATCH):
            batch = keys[start : start + _DELETE_BATCH]
            self._client.delete_objects(
                Bucket=self.bucket,
                Delete={"Objects": [{"Key": key} for key in batch], "Quiet": True},
            )

    def delete_torn_uploads(self, older_than: float) -> list[str]:
        """Delete the objects of every id under the prefix that has no manifest and whose
        newest object is ``older_than`` seconds old (a process killed mid-upload), and abort
        multipart uploads under the prefix started that long ago (their parts are billed but
        invisible). Returns the ids, sorted."""
        root = self._key("")
        newest: dict[str, float] = {}
        manifests: set[str] = set()
        paginator = self._client.get_paginator("list_objects_v2")
        for page in paginator.paginate(Bucket=self.bucket, Prefix=root):
            for item in page.get("Contents", []):
                rest = item["Key"][len(root) :]
                if "/" not in rest:
                    if rest.endswith(MANIFEST_SUFFIX):
                        manifests.add(rest[: -len(MANIFEST_SUFFIX)])
                    continue
                storage_id = rest.split("/", 1)[0]
                when = item["LastModified"].timestamp()
                newest[storage_id] = max(newest.get(storage_id, 0.0), when)
        cutoff = time.time() - older_than
        torn = sorted(
            sid
            for sid, when in newest.items()
            if sid not in manifests and when <= cutoff and _valid_id(sid)
        )
        for storage_id in torn:
            self.delete(storage_id)
        uploads = self._client.get_paginator("list_multipart_uploads")
        for page in uploads.paginate(Bucket=self.bucket, Prefix=root):
            for upload in page.get("Uploads", []):
                if upload["Initiated"].timestamp() <= cutoff:
                    with contextlib.suppress(Exception):
                        self._client.abort_multipart_upload(
                            Bucket=self.bucket, Key=upload["Key"], UploadId=upload["UploadId"]
                        )
        return torn

    def exists(self, storage_id: str) -> bool:
        try:
            self._client.head_object(Bucket=self.bucket, Key=self._manifest_key(storage_id))
        except Exception as err:
            if _is_missing(err):
                return False
            raise
        return True


_clients: dict[tuple[tuple[str, str] | None, str | None], Any] = {}
_clients_lock = threading.Lock()


def _client(keys: tuple[str, str] | None, endpoint_url: str | None) -> Any:
    """The boto3 S3 client for these credentials (None: boto3's chain) and endpoint, made once
    per process: making one takes a few tenths of a second (the master makes a storage per
    checkpoint download and deletion), and a client is safe to share between threads."""
    with _clients_lock:
        client = _clients.get((keys, endpoint_url))
        if client is None:
            boto3 = importlib.import_module("boto3")
            credentials = {}
            if keys is not None:
                credentials = {"aws_access_key_id": keys[0], "aws_secret_access_key": keys[1]}
            session = boto3.session.Session(**credentials)
            client = session.client("s3", endpoint_url=endpoint_url)
            _clients[(keys, endpoint_url)] = client
        return client


def _valid_id(storage_id: str) -> bool:
    try:
        check_storage_id(storage_id)
    except ValueError:
        return False
    return True


def _is_missing(err: Exception) -> bool:
    """Whether ``err`` is S3's "no such object" (botocore's ClientError with a 404)."""
    response = getattr(err, "response", None)
    if not isinstance(response, dict):
        return False
    return str(response.get("Error", {}).get("Code")) in _MISSING_CODES


def _directories(directory: Path) -> list[str]:
    """Every directory under ``directory`` (relative POSIX paths), so that a restore recreates
    the empty ones too: S3 has no directories."""
    found = []
    for root, dirs, _files in os.walk(directory):
        for name in dirs:
            found.append((Path(root) / name).relative_to(directory).as_posix())
    return sorted(found)
