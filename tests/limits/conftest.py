"""A real master process per database (SQLite, PostgreSQL), for the hostile-input tests.

The masters are the end-to-end tests' :class:`~tests.master.e2e.MasterProcess` (signed in as
the test administrator), with no read processes (every request is served, and measured, in
the master process itself).
"""

from __future__ import annotations

import functools
import tarfile
import zlib
from collections.abc import Iterator

import pytest

from pedl.db import Database
from tests.master.conftest import BACKENDS, _create_pg_database, _drop_pg_database
from tests.master.e2e import MasterProcess

RSS_LIMIT_BYTES = 500 * 1024 * 1024


@functools.cache
def million_member_archive() -> bytes:
    """A gzip-compressed tar of 1,000,000 empty files; built once. The first 11,000 have
    names of their own (a repeated name is refused as a duplicate at once); the rest repeat
    one name, never read by a check that stops at 10,000 members."""
    gz = zlib.compressobj(1, zlib.DEFLATED, 31)
    distinct = b"".join(tarfile.TarInfo(f"f{i}").tobuf(tarfile.GNU_FORMAT) for i in range(11_000))
    block = tarfile.TarInfo("f").tobuf(tarfile.GNU_FORMAT) * 1000
    parts = [gz.compress(distinct), *(gz.compress(block) for _ in range(989))]
    return b"".join([*parts, gz.compress(b"\0" * 1024), gz.flush()])


class Master:
    """A running master, the URL of its database, and its process's memory."""

    def __init__(self, process: MasterProcess, db_url: str) -> None:
        self.process = process
        self.http = process.http
        self.db_url = db_url

    def database(self) -> Database:
        return Database(self.db_url)

    def peak_rss(self) -> int:
        """The master process's peak resident memory so far (VmHWM), in bytes."""
        assert self.process.proc is not None
        with open(f"/proc/{self.process.proc.pid}/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
        raise AssertionError("no VmHWM in /proc/<pid>/status")

    def assert_well(self) -> None:
        """The master is alive, under 500 MB at its peak, and still serves a list."""
        assert self.process.proc is not None and self.process.proc.poll() is None, (
            self.process.log()[-3000:]
        )
        peak = self.peak_rss()
        assert peak < RSS_LIMIT_BYTES, f"the master's peak RSS is {peak / 2**20:.0f} MiB"
        assert self.http.get("/health").status_code == 200
        listing = self.http.get("/experiments")
        assert listing.status_code == 200, listing.text


@pytest.fixture(scope="package", params=BACKENDS)
def master(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Master]:
    """A master process on each database, shared by the package's tests."""
    home = tmp_path_factory.mktemp(f"limits-{request.param}")
    env = {"PEDL_READ_PROCESSES": "0", "PEDL_CPU_SLOTS": "1"}
    name = None
    if request.param == "postgresql":
        name, db_url = _create_pg_database()
        env["PEDL_DB_URL"] = db_url
    else:
        db_url = f"sqlite:///{home / 'pedl' / 'pedl.db'}"
    process = MasterProcess(home, cpu_slots=1, env=env).start()
    try:
        yield Master(process, db_url)
    finally:
        process.stop()
        if name is not None:
            _drop_pg_database(name)
