"""Azurite (Azure Storage's emulator, from npm) for tests: its blob service in a subprocess
on a loopback port, its data in a temporary directory.

``make test`` installs it into ``.azurite/`` (``make azurite``). ``azurite_server`` is a
session fixture (imported by the conftest of each test directory that needs it): Azurite
starts once per test session and stops at its end. The account is Azurite's well-known
development account; its connection string names the emulator's ``BlobEndpoint``.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.master.e2e import free_port
from tests.s3_server import stop, wait_until_listening

AZURITE = Path(__file__).resolve().parent.parent / ".azurite" / "node_modules" / ".bin"
ACCOUNT = "devstoreaccount1"
ACCOUNT_KEY = (  # Azurite's published development key, not a secret
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
)


@dataclass(frozen=True)
class AzuriteServer:
    blob_endpoint: str

    @property
    def connection_string(self) -> str:
        return (
            f"DefaultEndpointsProtocol=http;AccountName={ACCOUNT};AccountKey={ACCOUNT_KEY};"
            f"BlobEndpoint={self.blob_endpoint};"
        )

    def service(self) -> Any:
        from azure.storage.blob import BlobServiceClient

        return BlobServiceClient.from_connection_string(self.connection_string)

    def new_container(self) -> str:
        """A fresh, empty container: each test gets its own."""
        name = f"pedl-test-{uuid.uuid4().hex[:12]}"
        self.service().create_container(name)
        return name

    def keys(self, container: str, prefix: str = "") -> list[str]:
        """Every blob name in ``container`` under ``prefix``, sorted."""
        blobs = self.service().get_container_client(container).list_blobs(name_starts_with=prefix)
        return sorted(blob.name for blob in blobs)


def azurite_command() -> Path:
    """Azurite's blob service, as ``make azurite`` installs it; fails the test that needs it
    (never skips it) when it is missing."""
    command = AZURITE / "azurite-blob"
    if not command.exists():
        pytest.fail(f"Azurite is not installed ({command} is missing): run `make azurite`")
    if shutil.which("node") is None:
        pytest.fail("Azurite needs Node.js (node), which is not on PATH")
    return command


@pytest.fixture(scope="session")
def azurite_server() -> Iterator[AzuriteServer]:
    command = azurite_command()
    with tempfile.TemporaryDirectory(prefix="pedl-azurite-") as data:
        port = free_port()
        process = subprocess.Popen(
            [
                str(command),
                "--blobHost",
                "127.0.0.1",
                "--blobPort",
                str(port),
                "--location",
                data,
                "--skipApiVersionCheck",
                "--silent",
            ],
            cwd=data,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            wait_until_listening(process, port, "azurite-blob")
            yield AzuriteServer(f"http://127.0.0.1:{port}/{ACCOUNT}")
        finally:
            stop(process, grace=1)  # it has nothing to save: its data is thrown away
