"""The link between the processes of one trial: calls, errors, keys, concurrency."""

from __future__ import annotations

import gc
import logging
import os
import socket
import stat
import subprocess
import sys
import threading
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pedl.core._link_transport import LinkClient, LinkError, LinkServer
from tests.waits import scaled

ADDRESS, KEY = "TEST_LINK", "TEST_LINK_KEY"
LOGGER = logging.getLogger("tests.link")


def serve(handlers: dict[str, Callable[..., Any]]) -> LinkServer:
    return LinkServer(
        handlers, name="pedl-test-link", logger=LOGGER, address_env=ADDRESS, key_env=KEY
    )


def test_calls_are_answered_and_failures_name_the_handler_and_error() -> None:
    def fail(x: int) -> None:
        raise ValueError(f"no {x}")

    server = serve({"add": lambda a, b: a + b, "fail": fail})
    try:
        client = LinkClient.connect(
            dict(server.env), peer="the test's server", address_env=ADDRESS, key_env=KEY
        )
        assert client is not None
        assert client.call("add", 2, 3) == 5
        with pytest.raises(
            LinkError, match=r"the test's server could not carry out fail: ValueError: no 7"
        ):
            client.call("fail", 7)
        with pytest.raises(LinkError, match="missing: KeyError"):
            client.call("missing")
        assert client.call("add", "a", "b") == "ab"  # the link survives failed calls
        client.close()
    finally:
        server.close()


def test_the_socket_is_private_and_removed_at_close() -> None:
    server = serve({})
    address = Path(server.env[ADDRESS])
    assert stat.S_IMODE(address.parent.stat().st_mode) == 0o700
    server.close()
    assert not address.parent.exists()


def test_pop_takes_the_key_out_of_the_environment_and_no_link_is_none() -> None:
    server = serve({"ping": lambda: "pong"})
    try:
        environ = {**server.env, "OTHER": "1"}
        client = LinkClient.connect(environ, peer="p", pop=True, address_env=ADDRESS, key_env=KEY)
        assert client is not None and client.call("ping") == "pong"
        assert environ == {"OTHER": "1"}
        client.close()
        assert LinkClient.connect({}, peer="p", address_env=ADDRESS, key_env=KEY) is None
    finally:
        server.close()


def test_a_wrong_key_or_a_gone_server_is_a_link_error_naming_the_peer() -> None:
    server = serve({})
    env = dict(server.env)
    try:
        with pytest.raises(LinkError, match="to report to the trial's process"):
            LinkClient.connect(
                {**env, KEY: os.urandom(32).hex()},
                peer="the trial's process",
                address_env=ADDRESS,
                key_env=KEY,
            )
    finally:
        server.close()
    with pytest.raises(LinkError, match="cannot reach it"):
        LinkClient.connect(env, peer="the trial's process", address_env=ADDRESS, key_env=KEY)


def test_a_silent_peer_holds_up_nobody_and_refused_peers_leave_no_socket_open() -> None:
    server = serve({"ping": lambda: "pong"})
    silent = socket.socket(socket.AF_UNIX)
    try:
        silent.connect(server.env[ADDRESS])  # connected, never answers the handshake
        for _ in range(3):
            with pytest.raises(LinkError):
                LinkClient.connect(
                    {**server.env, KEY: os.urandom(32).hex()},
                    peer="p",
                    address_env=ADDRESS,
                    key_env=KEY,
                )
        client = LinkClient.connect(server.env, peer="p", address_env=ADDRESS, key_env=KEY)
        assert client is not None and client.call("ping") == "pong"
        client.close()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            gc.collect()  # a socket left open warns when it is collected
        assert [str(w.message) for w in caught if w.category is ResourceWarning] == []
    finally:
        silent.close()
        server.close()


def test_calls_from_several_processes_run_one_at_a_time() -> None:
    inside = threading.Semaphore(1)
    overlaps: list[bool] = []
    counter = [0]

    def bump() -> int:
        overlaps.append(not inside.acquire(blocking=False))
        try:
            counter[0] += 1
            return counter[0]
        finally:
            inside.release()

    server = serve({"bump": bump})
    script = (
        "import os\n"
        "from pedl.core._link_transport import LinkClient\n"
        f"c = LinkClient.connect(os.environ, peer='p', address_env={ADDRESS!r}, "
        f"key_env={KEY!r})\n"
        "for _ in range(50): c.call('bump')\n"
    )
    try:
        procs = [
            subprocess.Popen([sys.executable, "-c", script], env={**os.environ, **server.env})
            for _ in range(3)
        ]
        assert [p.wait(timeout=scaled(120)) for p in procs] == [0, 0, 0]
    finally:
        server.close()
    assert counter[0] == 150 and not any(overlaps)
