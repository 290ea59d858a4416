"""The fuzz tests use the master's test fixtures: a live master over HTTP on SQLite and on
PostgreSQL, and a client of it signed in as the administrator (see tests/master/conftest.py)."""

from tests.master.conftest import *  # noqa: F403  (every fixture, so their dependencies resolve)
