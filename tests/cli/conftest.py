"""The CLI's tests share the SDK tests' real master on loopback."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from pedl.client import Client
from tests.client.helpers import LiveMaster, write_config, write_model_dir


@pytest.fixture(scope="session")
def master(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveMaster]:
    live = LiveMaster(tmp_path_factory.mktemp("cli-master-home"))
    live.start()
    try:
        yield live
    finally:
        live.stop()


@pytest.fixture
def client(master: LiveMaster) -> Iterator[Client]:
    with Client(master.url) as sdk:
        yield sdk


@pytest.fixture
def storage(tmp_path: Path) -> Path:
    path = tmp_path / "checkpoints"
    path.mkdir()
    return path


@pytest.fixture
def config_file(tmp_path: Path, storage: Path) -> Path:
    return write_config(tmp_path, storage)


@pytest.fixture
def model_dir(tmp_path: Path) -> Path:
    return write_model_dir(tmp_path)
