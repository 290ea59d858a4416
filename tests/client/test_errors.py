"""Every failure is a PEDLError with the master's message and field; no raw HTTP errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from pedl.client import (
    Client,
    MasterUnreachableError,
    NotFoundError,
    PEDLError,
    master_url,
)
from pedl.model_def import ModelDefError

from .helpers import CONFIG_YAML, unused_port


def test_unknown_ids_are_not_found(client: Client) -> None:
    with pytest.raises(NotFoundError) as exp:
        client.get_experiment(2147483000)
    assert exp.value.status_code == 404 and exp.value.message == "experiment 2147483000 not found"
    with pytest.raises(NotFoundError, match="trial 2147483000 not found"):
        client.get_trial(2147483000)
    with pytest.raises(PEDLError) as invalid:
        client.get_experiment(0)
    assert invalid.value.status_code == 422 and invalid.value.field == "path.experiment_id"


def test_unreachable_master() -> None:
    url = f"http://127.0.0.1:{unused_port()}"
    with Client(url) as sdk, pytest.raises(MasterUnreachableError) as info:
        sdk.list_experiments()
    assert info.value.status_code is None
    assert f"cannot reach the PEDL master at {url}" in info.value.message
    assert "pedl master" in info.value.message


def test_bad_config_lists_every_field_with_its_line(
    client: Client, model_dir: Path, storage: Path
) -> None:
    text = CONFIG_YAML.format(storage=storage).replace("name: single", "name: sideways")
    text = text.replace("  metric: val_loss\n", "")
    with pytest.raises(PEDLError) as info:
        client.create_experiment(text, model_dir)
    err = info.value
    assert err.status_code == 422
    assert err.message.startswith("invalid experiment config")
    assert err.field is not None and err.field.startswith("config.searcher")
    fields = {issue.field for issue in err.issues}
    assert "config.searcher.name" in fields
    by_field = {issue.field: issue for issue in err.issues}
    assert by_field["config.searcher.name"].line == 6
    assert "sideways" in by_field["config.searcher.name"].message
    assert "config.searcher.name (line 6)" in err.details()


def test_bad_override_is_a_field_level_error(
    client: Client, config_file: Path, model_dir: Path
) -> None:
    with pytest.raises(PEDLError) as info:
        client.create_experiment(
            config_file, model_dir, overrides=["searcher.max_length.batches=-3", "oops"]
        )
    err = info.value
    fields = [issue.field for issue in err.issues]
    assert "config.searcher.max_length.batches" in fields
    assert any("malformed override 'oops'" in issue.message for issue in err.issues)
    assert err.status_code is None  # found before anything was sent


def test_missing_model_dir_and_config_file(
    client: Client, config_file: Path, tmp_path: Path
) -> None:
    with pytest.raises(ModelDefError):
        client.create_experiment(config_file, tmp_path / "no-such-dir")
    # A one-line str that names no file is YAML text: a scalar, which the master refuses.
    with pytest.raises(PEDLError) as info:
        client.create_experiment(str(tmp_path / "missing.yaml"), tmp_path)
    assert info.value.status_code == 422


def test_master_url_normalisation(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PEDL_MASTER", raising=False)
    assert master_url() == "http://127.0.0.1:8080"
    assert master_url("example.org:9000/") == "http://example.org:9000"
    monkeypatch.setenv("PEDL_MASTER", "https://m.example/")
    assert master_url() == "https://m.example"
    assert master_url("http://other:1") == "http://other:1"
