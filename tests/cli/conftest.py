"""The CLI's tests use the SDK tests' fixtures: a real master on loopback and its inputs."""

from tests.client.conftest import client, config_file, master, model_dir, storage, user_headers

__all__ = ["client", "config_file", "master", "model_dir", "storage", "user_headers"]
