"""The servers the storage tests run the remote backends against, each started once per test
session on a loopback port: moto's S3 server, a GCS emulator, and Azurite."""

from tests.azurite_server import azurite_server
from tests.gcs_server import gcs_server
from tests.s3_server import s3_server

__all__ = ["azurite_server", "gcs_server", "s3_server"]
