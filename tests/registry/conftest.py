"""The model registry's end-to-end tests: a real master, trials and a GCS emulator."""

from tests.gcs_server import gcs_server

__all__ = ["gcs_server"]
