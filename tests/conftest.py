"""Every test runs signed in as the test masters' administrator (see :mod:`tests.accounts`),
with the CLI's and the SDK's saved tokens in a temporary directory."""

from __future__ import annotations

import os
import shutil
import tempfile

import pytest

from tests.accounts import ADMIN, ADMIN_PASSWORD

_config_dir = ""


def pytest_configure(config: pytest.Config) -> None:
    global _config_dir
    _config_dir = tempfile.mkdtemp(prefix="pedl-test-config-")
    os.environ["PEDL_CONFIG_DIR"] = _config_dir
    os.environ["PEDL_ADMIN_PASSWORD"] = ADMIN_PASSWORD
    os.environ["PEDL_USER"] = ADMIN
    os.environ["PEDL_PASSWORD"] = ADMIN_PASSWORD


def pytest_unconfigure(config: pytest.Config) -> None:
    if _config_dir:
        shutil.rmtree(_config_dir, ignore_errors=True)
