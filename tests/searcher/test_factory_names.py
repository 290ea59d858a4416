"""Every searcher name the config accepts has a builder (config validation lists the names;
the factory builds them: adding one to either alone is caught here)."""

from __future__ import annotations

from pedl.config import SEARCHER_NAMES
from pedl.searcher import _factory


def test_every_config_searcher_name_is_built() -> None:
    assert (*_factory._BUILDERS, _factory.CUSTOM) == SEARCHER_NAMES
