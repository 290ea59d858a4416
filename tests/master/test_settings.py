"""MasterSettings: defaults, environment, YAML file, flags, in that order of precedence."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from pydantic import ValidationError

from pedl.master import MasterSettings


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for key in list(os.environ):
        if key.startswith("PEDL_"):
            monkeypatch.delenv(key)


def test_defaults_derive_from_home(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    settings = MasterSettings()
    assert settings.home == tmp_path / ".pedl"
    assert settings.db_url == f"sqlite:///{tmp_path / '.pedl' / 'pedl.db'}"
    assert settings.checkpoint_dir == tmp_path / ".pedl" / "checkpoints"
    assert (settings.host, settings.port) == ("127.0.0.1", 8080)
    assert settings.cpu_slots == max(1, (os.cpu_count() or 1) // 2)


def test_precedence_flags_env_yaml(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    config = tmp_path / "master.yaml"
    config.write_text(f"home: {tmp_path / 'h'}\nport: 7000\nhost: 0.0.0.0\ncpu_slots: 3\n")
    monkeypatch.setenv("PEDL_PORT", "9000")
    settings = MasterSettings(config_file=config)
    assert settings.port == 9000  # env beats the file
    assert settings.host == "0.0.0.0" and settings.cpu_slots == 3
    assert settings.db_url == f"sqlite:///{tmp_path / 'h' / 'pedl.db'}"
    assert MasterSettings(config_file=config, port=1234).port == 1234  # flags beat env

    monkeypatch.setenv("PEDL_CONFIG_FILE", str(config))
    monkeypatch.setenv("PEDL_DB_URL", "postgresql://u@db/pedl")
    from_env = MasterSettings()
    assert from_env.cpu_slots == 3 and from_env.db_url == "postgresql://u@db/pedl"


def test_bad_settings_are_rejected(tmp_path: Path) -> None:
    config = tmp_path / "master.yaml"
    config.write_text("prot: 8000\n")
    with pytest.raises(ValidationError, match="prot"):
        MasterSettings(config_file=config)
    with pytest.raises(ValidationError, match="port"):
        MasterSettings(port=70000)
    with pytest.raises(ValidationError, match="cpu_slots"):
        MasterSettings(cpu_slots=0)


def test_two_spare_workers_unless_set(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PEDL_SPARE_WORKERS", raising=False)
    assert MasterSettings().spare_workers == 2
    monkeypatch.setenv("PEDL_SPARE_WORKERS", "0")
    assert MasterSettings().spare_workers == 0
    monkeypatch.setenv("PEDL_SPARE_WORKERS", "-1")
    with pytest.raises(ValidationError, match="spare_workers"):
        MasterSettings()


def test_worker_reuse_is_on_unless_turned_off(monkeypatch: pytest.MonkeyPatch) -> None:
    assert MasterSettings().worker_reuse is True
    monkeypatch.setenv("PEDL_WORKER_REUSE", "0")
    assert MasterSettings().worker_reuse is False
    assert MasterSettings(worker_reuse=True).worker_reuse is True  # the flag beats the variable


def test_advertised_url_for_trials(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    assert MasterSettings(home=tmp_path).advertised_url is None  # http://HOST:PORT
    monkeypatch.setenv("PEDL_ADVERTISED_URL", "http://proxy.example:9000/")
    assert MasterSettings(home=tmp_path).advertised_url == "http://proxy.example:9000"
    for bad in ("proxy.example:9000", "ftp://proxy.example", "http://", "http:///path"):
        with pytest.raises(ValidationError, match="advertised_url"):
            MasterSettings(home=tmp_path, advertised_url=bad)
