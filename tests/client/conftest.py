"""A real master API on loopback (SQLite) shared by the SDK tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from pedl.client import Client
from pedl.master import MasterSettings, prepare_accounts
from tests.accounts import auth_headers
from tests.s3_server import s3_server

__all__ = ["s3_server"]  # S3 checkpoint storage for test_s3_checkpoints

from .helpers import LiveMaster, write_config, write_model_dir


@pytest.fixture(scope="session")
def master(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveMaster]:
    live = LiveMaster(tmp_path_factory.mktemp("master-home"))
    live.start()
    # The admin account with the tests' password (PEDL_ADMIN_PASSWORD, see tests/conftest.py),
    # as `pedl master` makes it at its start.
    prepare_accounts(live.database, MasterSettings(db_url=live.db_url))
    try:
        yield live
    finally:
        live.stop()


@pytest.fixture(scope="session")
def user_headers(master: LiveMaster) -> dict[str, str]:
    """The Authorization header of a session of the test administrator, for raw HTTP."""
    return auth_headers(master.url)


@pytest.fixture
def client(master: LiveMaster) -> Iterator[Client]:
    with Client(master.url) as sdk:
        yield sdk


@pytest.fixture
def storage(tmp_path: Path) -> Path:
    """This test's checkpoint storage directory (shared_fs host_path)."""
    path = tmp_path / "checkpoints"
    path.mkdir()
    return path


@pytest.fixture
def config_file(tmp_path: Path, storage: Path) -> Path:
    return write_config(tmp_path, storage)


@pytest.fixture
def model_dir(tmp_path: Path) -> Path:
    return write_model_dir(tmp_path)
