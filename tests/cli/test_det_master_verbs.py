"""det 0.38.1's master verbs on a real master, through ``det`` and ``pedl``: ``master config
[show] [--json|--yaml]``, ``master cluster-message set/get/clear`` (stored in the database;
administrators set and clear it) and ``master info`` in det's YAML with the message."""

from __future__ import annotations

import json
import logging
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest
import yaml
from click.testing import CliRunner, Result

import pedl
from pedl.cli import cli
from pedl.cli._det import det
from pedl.client import Client, PEDLError, Session, TokenStore
from pedl.master.api.cluster_message import parse_duration
from pedl.master.api.master_config import MASTER_LOGGER
from tests.client.helpers import LiveMaster


def run_det(master: LiveMaster, *args: str) -> Result:
    return CliRunner().invoke(det, ["-m", master.url, *args])


def run_pedl(master: LiveMaster, *args: str) -> Result:
    return CliRunner().invoke(cli, ["--master", master.url, *args])


def _rfc3339(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def test_master_config_show_as_det_prints_it(master: LiveMaster) -> None:
    for args in (
        ["master", "config"],
        ["master", "config", "show"],
        ["master", "config", "--yaml"],
    ):
        shown = run_det(master, *args)
        assert shown.exit_code == 0, (args, shown.output)
        assert shown.output.endswith("\n\n")  # det's print() of the YAML
        assert yaml.safe_load(shown.output)["db_url"] == master.db_url
    as_json = run_det(master, "master", "config", "show", "--json")
    assert as_json.exit_code == 0 and json.loads(as_json.output)["db_url"] == master.db_url
    group_json = run_pedl(master, "master", "config", "--json")
    assert json.loads(group_json.output)["db_url"] == master.db_url
    both = run_det(master, "master", "config", "show", "--json", "--yaml")
    assert both.exit_code == 2


def test_cluster_message_set_get_clear(master: LiveMaster, tmp_path: Path) -> None:
    text = f"Maintenance tonight {uuid.uuid4().hex[:6]}"
    assert run_det(master, "master", "cluster-message", "clear").exit_code == 0
    empty = run_det(master, "master", "cluster-message", "get")
    assert empty.exit_code == 0 and empty.output == "clusterMessage: null\n\n", empty.output

    made = run_det(master, "master", "cluster-message", "set", "-m", text, "-d", "2h")
    assert made.exit_code == 0 and made.output == "", made.output  # det prints nothing
    got = yaml.safe_load(run_det(master, "master", "cluster-message", "get").output)
    message = got["clusterMessage"]
    assert list(message) == ["message", "startTime", "createdTime", "endTime"]
    assert message["message"] == text
    start = datetime.fromisoformat(message["startTime"])
    end = datetime.fromisoformat(message["endTime"])
    assert end - start == timedelta(hours=2)
    as_json = json.loads(run_det(master, "master", "cluster-message", "get", "--json").output)
    assert as_json["clusterMessage"]["message"] == text

    info = yaml.safe_load(run_det(master, "master", "info").output)
    assert info["version"] == pedl.__version__ and info["clusterMessage"]["message"] == text
    assert list(info)[:6] == [
        "clusterId",
        "clusterName",
        "hasCustomLogo",
        "masterId",
        "strictJobQueueControl",
        "version",
    ]
    pedl_info = run_pedl(master, "master", "info")
    assert f"cluster_message: {text}" in pedl_info.output, pedl_info.output
    pedl_yaml = yaml.safe_load(run_pedl(master, "master", "info", "--yaml").output)
    assert pedl_yaml["cluster_message"]["message"] == text and pedl_yaml["master"] == master.url

    later = datetime.now(UTC) + timedelta(days=1)
    replaced = run_pedl(
        master,
        "master",
        "cluster-message",
        "set",
        "-m",
        "Upgrade tomorrow",
        "-s",
        _rfc3339(later),
        "-e",
        _rfc3339(later + timedelta(hours=3)),
    )
    assert replaced.exit_code == 0 and "Set the cluster-wide message" in replaced.output
    got = yaml.safe_load(run_det(master, "master", "cluster-message", "get").output)
    assert got["clusterMessage"]["message"] == "Upgrade tomorrow"  # starts later, still current

    cleared = run_det(master, "master", "cluster-message", "clear", "-c")
    assert cleared.exit_code == 0 and cleared.output == ""
    assert run_det(master, "master", "cluster-message", "get").output == "clusterMessage: null\n\n"

    no_text = run_det(master, "master", "cluster-message", "set")
    assert no_text.exit_code == 1 and "Provide a message using the -m flag." in no_text.output
    bad_time = run_det(master, "master", "cluster-message", "set", "-m", "x", "-s", "tomorrow")
    assert bad_time.exit_code == 1 and "Start time must be RFC-3339" in bad_time.output
    both = run_det(
        master,
        "master",
        "cluster-message",
        "set",
        "-m",
        "x",
        "-e",
        "2030-01-01T00:00:00Z",
        "-d",
        "1h",
    )
    assert both.exit_code == 2
    bad_duration = run_det(master, "master", "cluster-message", "set", "-m", "x", "-d", "soon")
    assert bad_duration.exit_code == 1 and "duration" in bad_duration.output
    past = run_det(
        master, "master", "cluster-message", "set", "-m", "x", "-e", "2020-01-01T00:00:00Z"
    )
    assert past.exit_code == 1 and "in the future" in past.output


def test_only_administrators_set_the_message(
    master: LiveMaster, client: Client, tmp_path: Path, user_headers: dict[str, str]
) -> None:
    username = f"msg{uuid.uuid4().hex[:8]}"
    client.create_user(username, "message-password-1")
    viewer = Session(master.url, tokens=TokenStore(tmp_path / "tokens"))
    viewer.login(username, "message-password-1")
    try:
        assert "cluster_message" in viewer.get("/master/cluster_message")
        for call in (
            lambda: viewer.put("/master/cluster_message", json={"message": "mine"}),
            lambda: viewer.delete("/master/cluster_message"),
        ):
            with pytest.raises(PEDLError) as refused:
                call()
            assert refused.value.status_code == 403
    finally:
        viewer.close()
    url = f"{master.url}/api/v1/master/cluster_message"
    nul = httpx.put(url, json={"message": "a\x00b"}, headers=user_headers)
    assert nul.status_code == 422
    long = httpx.put(url, json={"message": "x" * 1001}, headers=user_headers)
    assert long.status_code == 422


def test_durations_as_determined_writes_them() -> None:
    assert parse_duration("24h") == timedelta(hours=24)
    assert parse_duration("2w") == timedelta(weeks=2)
    assert parse_duration("5d") == timedelta(days=5)
    assert parse_duration("1h30m") == timedelta(minutes=90)
    assert parse_duration("1.5h") == timedelta(minutes=90)
    for bad in ("", "5", "h", "5y", "-1h", "0s", "1h 2m"):
        with pytest.raises(ValueError):
            parse_duration(bad)


def test_master_config_set_log_level(master: LiveMaster) -> None:
    logger = logging.getLogger(MASTER_LOGGER)
    before = logger.level
    try:
        made = run_det(master, "master", "config", "set", "--log.level", "DEBUG")
        assert made.exit_code == 0, made.output
        assert made.stdout == "Successfully made changes to the master config.\n"
        assert "ephermeral" in made.stderr
        assert logger.getEffectiveLevel() == logging.DEBUG  # the master runs in this process
        assert run_det(master, "master", "config", "set", "--log.level", "TRACE").exit_code == 0
        assert run_pedl(master, "master", "config", "set", "--log.level", "WARNING").exit_code == 0
        assert logger.getEffectiveLevel() == logging.WARNING
    finally:
        logger.setLevel(before)
    nothing = run_det(master, "master", "config", "set")
    assert nothing.exit_code == 1 and "Please provide at least one argument" in nothing.output
    color = run_det(master, "master", "config", "set", "--log.color", "on")
    assert color.exit_code == 1 and "without colours" in color.output
    assert len(color.output.strip().splitlines()) == 1
    bad = run_det(master, "master", "config", "set", "--log.level", "LOUD")
    assert bad.exit_code == 2
