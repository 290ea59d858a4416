"""The model definition limits are the master's settings (``max_model_definition_bytes``,
``..._unpacked_bytes``, ``..._members``): a lowered one is enforced with a 422 naming it, the
master tells clients its limits (``GET /master``), and the SDK refuses a directory over them
before uploading anything, saying how to leave files out."""

from __future__ import annotations

import base64
import os
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from pedl.client import Client, Session
from pedl.master import MasterSettings
from pedl.model_def import ModelDefError, package
from tests.master.helpers import CONFIG_YAML, LiveServer, make_archive, served_master, sign_in
from tests.waits import scaled

MEMBERS = 5
UNPACKED = 64 * 1024
ARCHIVE = 16 * 1024


class _Master:
    def __init__(self, server: LiveServer, token: str) -> None:
        self.url = server.url
        self.token = token
        self.http = httpx.Client(
            base_url=server.url + "/api/v1", timeout=scaled(30), headers={"Authorization": token}
        )


@pytest.fixture(scope="module")
def lowered(tmp_path_factory: pytest.TempPathFactory) -> Iterator[_Master]:
    """A master on SQLite whose model definition limits are far below the defaults."""
    home = tmp_path_factory.mktemp("lowered")
    settings = MasterSettings(
        home=home,
        max_model_definition_bytes=ARCHIVE,
        max_model_definition_unpacked_bytes=UNPACKED,
        max_model_definition_members=MEMBERS,
    )
    with served_master(settings) as (server, database):
        master = _Master(server, sign_in(database)["Authorization"])
        yield master
        master.http.close()


def _create(master: _Master, files: dict[str, bytes]) -> httpx.Response:
    archive = base64.b64encode(make_archive(files)).decode()
    body = {"config": CONFIG_YAML, "model_definition": archive, "activate": False}
    return master.http.post("/experiments", json=body)


def test_the_settings_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PEDL_MAX_MODEL_DEFINITION_MEMBERS", "7")
    monkeypatch.setenv("PEDL_MAX_MODEL_DEFINITION_BYTES", str(2 * 1024 * 1024))
    settings = MasterSettings()
    assert settings.max_model_definition_members == 7
    # The upload limit follows: the base64 of such an archive and a 1 MiB config.
    assert settings.upload_bytes == len(base64.b64encode(bytes(2 * 1024 * 1024))) + 1024 * 1024
    monkeypatch.delenv("PEDL_MAX_MODEL_DEFINITION_MEMBERS")
    monkeypatch.delenv("PEDL_MAX_MODEL_DEFINITION_BYTES")
    defaults = MasterSettings()
    assert defaults.max_model_definition_members == 10_000
    assert defaults.max_model_definition_bytes == 96 * 1024 * 1024
    assert defaults.upload_bytes == 129 * 1024 * 1024


def test_the_master_says_its_limits(lowered: _Master) -> None:
    answer = lowered.http.get("/master")
    assert answer.status_code == 200, answer.text
    limits = answer.json()["limits"]["model_definition"]
    assert limits == {"max_bytes": ARCHIVE, "max_unpacked_bytes": UNPACKED, "max_members": MEMBERS}


@pytest.mark.parametrize(
    ("files", "setting", "fragment"),
    [
        (
            {f"m{i}.py": b"" for i in range(MEMBERS + 1)},
            "max_model_definition_members",
            "limit of 5",
        ),
        ({"zeros.bin": bytes(UNPACKED + 1)}, "max_model_definition_unpacked_bytes", "65536"),
        ({"noise.bin": os.urandom(ARCHIVE + 1)}, "max_model_definition_bytes", "16384"),
    ],
    ids=["members", "unpacked", "archive"],
)
def test_a_lowered_limit_is_a_422_naming_its_setting(
    lowered: _Master, files: dict[str, bytes], setting: str, fragment: str
) -> None:
    response = _create(lowered, files)
    assert response.status_code == 422, response.text
    error = response.json()["error"]
    assert error["field"] == "body.model_definition"
    assert setting in error["message"] and fragment in error["message"], error["message"]
    # Within the limits, the same master accepts it.
    assert _create(lowered, {"model.py": b"x = 1\n"}).status_code == 201


def test_the_sdk_refuses_a_directory_over_the_limits_before_uploading(
    lowered: _Master, tmp_path: Path
) -> None:
    model = tmp_path / "model"
    (model / "data").mkdir(parents=True)
    (model / "model.py").write_text("x = 1\n")
    (model / "data" / "big.bin").write_bytes(bytes(UNPACKED + 1))
    before = lowered.http.get("/experiments").json()["total"]
    with Client(session=Session(lowered.url, token=lowered.token.removeprefix("Bearer "))) as sdk:
        # A ModelDefError is the SDK's own: the master would answer with a PEDLError.
        with pytest.raises(ModelDefError) as caught:
            sdk.create_experiment(CONFIG_YAML, model, activate=False)
        message = str(caught.value)
        assert "64.0 KiB" in message and "data/big.bin" in message, message
        assert ".pedlignore" in message and ".detignore" in message, message
        assert lowered.http.get("/experiments").json()["total"] == before
        (model / ".pedlignore").write_text("data/\n")
        created = sdk.create_experiment(CONFIG_YAML, model, activate=False)
    assert created.id > 0
    assert lowered.http.get("/experiments").json()["total"] == before + 1


def test_packaging_refuses_files_that_add_up_to_more_than_the_unpacked_limit(
    tmp_path: Path,
) -> None:
    (tmp_path / "a.bin").write_bytes(bytes(1000))
    (tmp_path / "b.bin").write_bytes(bytes(1000))
    assert package(tmp_path, max_unpacked_bytes=2000)
    expected = r"files add up to 2\.0 KiB \(2000 bytes\), over the limit of 2\.0 KiB \(1999"
    with pytest.raises(ModelDefError, match=expected):
        package(tmp_path, max_unpacked_bytes=1999)
