"""Checkpoints in an S3 bucket (or an S3-compatible server through ``endpoint_url``).

The layout and the atomic manifest are :class:`ObjectStorage`'s (Determined's layout,
``<prefix>/<id>/<relative path>``, plus ``<prefix>/<id>.pedl-manifest.json`` written last); this
module gives it S3's primitives, and its torn-upload GC also aborts stale multipart uploads.

boto3 is an optional dependency (``pip install 'pedl[s3]'``), imported when an
:class:`S3Storage` is made: importing it costs about a third of a second, which the CLI and
every shared_fs user would otherwise pay.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import threading
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

from pedl.storage._base import UnsupportedStorageError
from pedl.storage._object_store import ObjectStorage

MISSING_BOTO3 = (
    "checkpoint_storage.type 's3' needs boto3, which is not installed: pip install 'pedl[s3]'"
)
_DELETE_BATCH = 1000  # the most keys one DeleteObjects request takes
_MISSING_CODES = frozenset({"404", "NoSuchKey", "NotFound"})  # S3's "no such object"


def s3_unavailable_reason() -> str | None:
    """Why S3 storage cannot be used in this Python environment (boto3 is missing), or
    ``None``; looks for the package without importing it."""
    return MISSING_BOTO3 if importlib.util.find_spec("boto3") is None else None


class S3Storage(ObjectStorage):
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
        super().__init__("s3", bucket, prefix)
        self.bucket = bucket
        keys = (access_key, secret_key) if access_key and secret_key else None
        self._client = _client(keys, endpoint_url or None)

    # primitives ------------------------------------------------------------------------

    def _put_file(self, key: str, path: Path) -> None:
        self._client.upload_file(str(path), self.bucket, key)

    def _put_bytes(self, key: str, data: bytes) -> None:
        self._client.put_object(Bucket=self.bucket, Key=key, Body=data)

    def _get_bytes(self, key: str) -> bytes:
        with _missing_as_file_not_found(key):
            body: bytes = self._client.get_object(Bucket=self.bucket, Key=key)["Body"].read()
        return body

    def _get_file(self, key: str, path: Path) -> None:
        with _missing_as_file_not_found(key):
            self._client.download_file(self.bucket, key, str(path))

    def _list(self, prefix: str) -> Iterator[tuple[str, datetime]]:
        paginator = self._client.get_paginator("list_objects_v2")
        for page in paginator.paginate(Bucket=self.bucket, Prefix=prefix):
            for item in page.get("Contents", []):
                yield item["Key"], item["LastModified"]

    def _delete_keys(self, keys: list[str]) -> None:
        for start in range(0, len(keys), _DELETE_BATCH):
            batch = keys[start : start + _DELETE_BATCH]
            self._client.delete_objects(
                Bucket=self.bucket,
                Delete={"Objects": [{"Key": key} for key in batch], "Quiet": True},
            )

    def _has(self, key: str) -> bool:
        try:
            self._client.head_object(Bucket=self.bucket, Key=key)
        except Exception as err:
            if _is_missing(err):
                return False
            raise
        return True

    # beyond the shared contract --------------------------------------------------------

    def delete_torn_uploads(self, older_than: float) -> list[str]:
        """As :meth:`ObjectStorage.delete_torn_uploads`, and abort the multipart uploads under
        the prefix started ``older_than`` seconds ago (their parts are billed but invisible)."""
        torn = super().delete_torn_uploads(older_than)
        cutoff = time.time() - older_than
        uploads = self._client.get_paginator("list_multipart_uploads")
        for page in uploads.paginate(Bucket=self.bucket, Prefix=self._key("")):
            for upload in page.get("Uploads", []):
                if upload["Initiated"].timestamp() <= cutoff:
                    with contextlib.suppress(Exception):
                        self._client.abort_multipart_upload(
                            Bucket=self.bucket, Key=upload["Key"], UploadId=upload["UploadId"]
                        )
        return torn


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


@contextlib.contextmanager
def _missing_as_file_not_found(key: str) -> Iterator[None]:
    try:
        yield
    except Exception as err:
        if _is_missing(err):
            raise FileNotFoundError(key) from err
        raise


def _is_missing(err: Exception) -> bool:
    """Whether ``err`` is S3's "no such object" (botocore's ClientError with a 404)."""
    response = getattr(err, "response", None)
    if not isinstance(response, dict):
        return False
    return str(response.get("Error", {}).get("Code")) in _MISSING_CODES
