"""Creating, finding, steering and waiting for experiments through the SDK."""

from __future__ import annotations

import io
import tarfile
import threading
import time
from pathlib import Path

import httpx
import pytest
import yaml

import pedl.client
from pedl.client import Client, Experiment, PEDLError
from pedl.vocabulary import ExperimentState
from tests.accounts import auth_headers
from tests.waits import scaled

from .helpers import LiveMaster


def _archive_names(master: LiveMaster, experiment_id: int) -> list[str]:
    response = httpx.get(
        f"{master.url}/api/v1/experiments/{experiment_id}/model_definition",
        headers=auth_headers(master.url),
    )
    assert response.status_code == 200
    with tarfile.open(fileobj=io.BytesIO(response.content), mode="r:gz") as archive:
        return sorted(m.name for m in archive.getmembers() if m.isfile())


def test_create_from_file_packages_the_model_dir(
    client: Client, master: LiveMaster, config_file: Path, model_dir: Path
) -> None:
    exp = client.create_experiment(config_file, model_dir)
    assert exp.id >= 1 and exp.state == "ACTIVE" and exp.name == "sdk-test"
    assert exp.searcher_metric == "val_loss" and exp.smaller_is_better
    assert exp.config["searcher"]["name"] == "single"
    # .pedlignore is honoured: big.bin stays behind.
    assert _archive_names(master, exp.id) == [".pedlignore", "model_def.py"]
    same = client.get_experiment(exp.id)
    assert (same.id, same.name, same.state, same.config) == (exp.id, exp.name, "ACTIVE", exp.config)


def test_create_from_text_mapping_and_str_path(
    client: Client, config_file: Path, model_dir: Path
) -> None:
    text = config_file.read_text()
    from_text = client.create_experiment(text, model_dir)
    from_mapping = client.create_experiment(yaml.safe_load(text), model_dir)
    from_str_path = client.create_experiment(str(config_file), model_dir, activate=False)
    # The config has no experiment_seed: each experiment gets the clock's (as Determined
    # does), which differs when the three creations span a second. The rest is the same.
    configs = [from_text.config, from_mapping.config, from_str_path.config]
    seeds = [c["reproducibility"].pop("experiment_seed") for c in configs]
    assert configs[0] == configs[1] == configs[2]
    assert seeds == sorted(seeds) and seeds[2] - seeds[0] <= 60
    assert from_str_path.state == "PAUSED"
    assert len({from_text.id, from_mapping.id, from_str_path.id}) == 3


def test_overrides_apply_before_submitting(
    client: Client, config_file: Path, model_dir: Path
) -> None:
    exp = client.create_experiment(
        config_file, model_dir, overrides=["name=overridden", "searcher.max_length.batches=7"]
    )
    assert exp.name == "overridden"
    assert exp.config["searcher"]["max_length"] == {"batches": 7}


def test_list_experiments_newest_first_with_state_filter(
    client: Client, config_file: Path, model_dir: Path
) -> None:
    first = client.create_experiment(config_file, model_dir)
    second = client.create_experiment(config_file, model_dir, activate=False)
    ids = [e.id for e in client.list_experiments()]
    assert ids.index(second.id) < ids.index(first.id)
    paused = [e.id for e in client.list_experiments(states=["PAUSED"])]
    assert second.id in paused and first.id not in paused
    assert all(e.state == "PAUSED" for e in client.list_experiments(states=["PAUSED"]))


def test_list_experiments_pages_through_everything(
    master: LiveMaster, config_file: Path, model_dir: Path
) -> None:
    with Client(master.url) as sdk:
        created = {sdk.create_experiment(config_file, model_dir).id for _ in range(3)}
        total = len(sdk.list_experiments())
        # A tiny page size forces several requests; the result is the same list.
        items = sdk.session.get_all("/experiments", page_size=2)
        assert len(items) == total and created <= {item["id"] for item in items}


def test_actions_change_state_and_refuse_illegal_moves(
    client: Client, config_file: Path, model_dir: Path
) -> None:
    exp = client.create_experiment(config_file, model_dir)
    exp.pause()
    assert exp.state == "PAUSED" and client.get_experiment(exp.id).state == "PAUSED"
    exp.activate()
    assert exp.state == "ACTIVE"
    exp.cancel()
    assert exp.state == "STOPPING_CANCELED"
    exp.kill()
    assert exp.state == "STOPPING_KILLED"
    with pytest.raises(PEDLError) as info:
        exp.activate()
    assert info.value.status_code == 409 and info.value.field == "state"
    assert f"cannot activate experiment {exp.id}" in info.value.message


def test_wait_polls_until_terminal(
    client: Client, master: LiveMaster, config_file: Path, model_dir: Path
) -> None:
    exp = client.create_experiment(config_file, model_dir)
    seen: list[str] = []

    def finish() -> None:
        time.sleep(0.3)
        master.set_experiment_state(exp.id, ExperimentState.COMPLETED)

    thread = threading.Thread(target=finish)
    thread.start()
    try:
        state = exp.wait(interval=0.05, timeout=scaled(20), on_poll=lambda e: seen.append(e.state))
    finally:
        thread.join()
    assert state == "COMPLETED" and exp.is_terminal and exp.ended_at is not None
    assert seen[-1] == "COMPLETED" and seen.count("ACTIVE") >= 2


def test_wait_times_out(client: Client, config_file: Path, model_dir: Path) -> None:
    exp = client.create_experiment(config_file, model_dir)
    started = time.monotonic()
    with pytest.raises(TimeoutError, match=f"experiment {exp.id} is still ACTIVE"):
        exp.wait(interval=0.05, timeout=0.2)
    assert time.monotonic() - started < 5


def test_module_functions_use_pedl_master(
    master: LiveMaster, config_file: Path, model_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PEDL_MASTER", master.url.removeprefix("http://"))
    client = pedl.client.set_master(None)
    try:
        assert client.master == master.url
        exp = pedl.client.create_experiment(config_file, model_dir, activate=False)
        assert isinstance(exp, Experiment)
        assert pedl.client.get_experiment(exp.id).state == "PAUSED"
        assert exp.id in [e.id for e in pedl.client.list_experiments(states=["PAUSED"])]
        assert pedl.client.default_client() is client
    finally:
        pedl.client.set_master(None).close()
