"""A real S3-compatible server for tests: moto's server in a subprocess on a loopback port.

``s3_server`` is a session fixture (imported by the conftest of each test directory that
needs it). It points boto3 at dummy credentials and away from the user's AWS files and the
instance metadata service, so nothing reaches out of this machine; trial processes started
by the tests inherit the same environment.
"""

from __future__ import annotations

import functools
import os
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import boto3
import pytest

from tests.master.e2e import free_port
from tests.waits import scaled

ACCESS_KEY = "pedl-test-access"
SECRET_KEY = "pedl-test-secret"
START_SECONDS = scaled(60)

AWS_ENV = {
    "AWS_ACCESS_KEY_ID": ACCESS_KEY,
    "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_CONFIG_FILE": os.devnull,
    "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
    "AWS_EC2_METADATA_DISABLED": "true",
}


@dataclass(frozen=True)
class S3Server:
    endpoint_url: str

    def client(self) -> Any:
        return _client(self.endpoint_url)

    def new_bucket(self) -> str:
        """A fresh, empty bucket: each test gets its own."""
        name = f"pedl-test-{uuid.uuid4().hex[:12]}"
        self.client().create_bucket(Bucket=name)
        return name

    def keys(self, bucket: str, prefix: str = "") -> list[str]:
        """Every object key in ``bucket`` under ``prefix``, sorted."""
        pages = (
            self.client().get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix)
        )
        return sorted(item["Key"] for page in pages for item in page.get("Contents", []))


@functools.cache
def _client(endpoint_url: str) -> Any:
    session = boto3.session.Session(aws_access_key_id=ACCESS_KEY, aws_secret_access_key=SECRET_KEY)
    return session.client("s3", endpoint_url=endpoint_url, region_name="us-east-1")


def wait_until_listening(process: subprocess.Popen[bytes], port: int, name: str) -> None:
    """Wait until the server ``process`` (called ``name`` in errors) accepts connections on
    ``port`` of loopback; raise if it exits or is not up within START_SECONDS."""
    deadline = time.monotonic() + START_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{name} exited with {process.returncode} at start")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"{name} did not listen on port {port} within {START_SECONDS:.0f} s")


def stop(process: subprocess.Popen[bytes], grace: float = 5) -> None:
    """Stop a server started by a fixture: SIGTERM, then SIGKILL after ``grace`` seconds (a
    server that waits for its clients' idle keep-alive connections to close would otherwise
    keep the session from ending)."""
    process.terminate()
    try:
        process.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=scaled(30))


@pytest.fixture(scope="session")
def s3_server() -> Iterator[S3Server]:
    with pytest.MonkeyPatch.context() as patch:
        for name, value in AWS_ENV.items():
            patch.setenv(name, value)
        port = free_port()
        process = subprocess.Popen(
            [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            wait_until_listening(process, port, "moto_server")
            yield S3Server(f"http://127.0.0.1:{port}")
        finally:
            stop(process)
