"""The master's ``resource_manager`` setting: from the YAML config file, from
``PEDL_RESOURCE_MANAGER`` (JSON), validated."""

from __future__ import annotations

from pathlib import Path

import pydantic
import pytest

from pedl.master import MasterSettings


def test_the_config_file_chooses_ray(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PEDL_RESOURCE_MANAGER", raising=False)
    path = tmp_path / "master.yaml"
    path.write_text(
        "resource_manager: {type: ray, address: 10.0.0.5:6379, placement_strategy: SPREAD}\n"
    )
    chosen = MasterSettings(config_file=path, home=tmp_path).resource_manager
    assert (chosen.type, chosen.address, chosen.placement_strategy) == (
        "ray",
        "10.0.0.5:6379",
        "SPREAD",
    )
    assert MasterSettings(home=tmp_path).resource_manager.type == "local"


def test_the_environment_wins_over_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "master.yaml"
    path.write_text("resource_manager: {type: local}\n")
    monkeypatch.setenv("PEDL_RESOURCE_MANAGER", '{"type": "ray", "address": "h:1"}')
    chosen = MasterSettings(config_file=path, home=tmp_path).resource_manager
    assert (chosen.type, chosen.address) == ("ray", "h:1")


@pytest.mark.parametrize(
    "value",
    [{"type": "kubernetes"}, {"type": "ray", "adress": "h:1"}, {"placement_strategy": "STRICT"}],
)
def test_wrong_values_are_refused(tmp_path: Path, value: dict[str, str]) -> None:
    with pytest.raises(pydantic.ValidationError, match="resource_manager"):
        MasterSettings(home=tmp_path, resource_manager=value)
