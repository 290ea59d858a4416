"""A GCS emulator for tests: gcp-storage-emulator (from PyPI) in a subprocess on a loopback
port, its data in a temporary directory.

``gcs_server`` is a session fixture (imported by the conftest of each test directory that
needs it): the emulator starts once per test session and stops at its end. It sets
``STORAGE_EMULATOR_HOST`` (which google-cloud-storage and :class:`pedl.storage.GCSStorage`
follow) for the session, so trial processes started by the tests reach it too and nothing
reaches Google.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from pedl.storage._gcs import import_gcs
from tests.master.e2e import free_port
from tests.s3_server import stop, wait_until_listening

EMULATOR_VARIABLE = "STORAGE_EMULATOR_HOST"


@dataclass(frozen=True)
class GCSServer:
    endpoint: str

    def client(self) -> Any:
        from google.auth.credentials import AnonymousCredentials

        return import_gcs().Client(project="pedl-test", credentials=AnonymousCredentials())

    def new_bucket(self) -> str:
        """A fresh, empty bucket: each test gets its own."""
        name = f"pedl-test-{uuid.uuid4().hex[:12]}"
        self.client().create_bucket(name)
        return name

    def keys(self, bucket: str, prefix: str = "") -> list[str]:
        """Every object name in ``bucket`` under ``prefix``, sorted."""
        return sorted(blob.name for blob in self.client().list_blobs(bucket, prefix=prefix))


@pytest.fixture(scope="session")
def gcs_server() -> Iterator[GCSServer]:
    with (
        pytest.MonkeyPatch.context() as patch,
        tempfile.TemporaryDirectory(prefix="pedl-gcs-emulator-") as data,
    ):
        port = free_port()
        endpoint = f"http://127.0.0.1:{port}"
        patch.setenv(EMULATOR_VARIABLE, endpoint)
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "gcp_storage_emulator",
                "start",
                "-H",
                "127.0.0.1",
                "--port",
                str(port),
                "--quiet",
            ],
            cwd=data,
            env={**os.environ, "STORAGE_BASE": data},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            wait_until_listening(process, port, "gcp-storage-emulator")
            yield GCSServer(endpoint)
        finally:
            stop(process, grace=1)  # it has nothing to save: its data is thrown away
