"""The masking tests use the SDK tests' fixtures: a real master on loopback and its inputs."""

from tests.client.conftest import client, config_file, master, model_dir, storage

__all__ = ["client", "config_file", "master", "model_dir", "storage"]
