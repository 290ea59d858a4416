"""The ``pedl`` commands that talk to a master, run as a user runs them (CliRunner)."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from pedl.cli import cli
from pedl.client import Client, Experiment
from pedl.vocabulary import ExperimentState, TrialState
from tests.client.helpers import CONFIG_YAML, LiveMaster, report, store_checkpoint, unused_port
from tests.waits import scaled


def run(master: LiveMaster, *args: str) -> Result:
    return CliRunner().invoke(
        cli, ["--master", master.url, *args], terminal_width=200, env={"COLUMNS": "200"}
    )


@pytest.fixture
def experiment(client: Client, config_file: Path, model_dir: Path) -> Experiment:
    return client.create_experiment(config_file, model_dir)


@pytest.fixture
def finished(master: LiveMaster, experiment: Experiment, storage: Path) -> dict[str, Any]:
    """Two trials with validations and checkpoints; trial 2 holds the best (val_loss 0.1)."""
    uuids = []
    for val_loss in (0.4, 0.1):
        trial_id, token = master.create_trial(experiment.id, lr=val_loss)
        with master.trial_api(token) as api:
            report(api, trial_id, "training", 5, loss=1.5)
            report(api, trial_id, "validation", 5, val_loss=val_loss)
            uuids.append(store_checkpoint(api, trial_id, storage, 5, {"w.bin": b"w" * 9}))
            lines = [{"seq": 0, "message": "hello from the trial"}]
            api.post(f"/trials/{trial_id}/logs", json={"lines": lines})
        master.set_trial_state(trial_id, TrialState.COMPLETED)
    trials = [t.id for t in experiment.list_trials()]
    return {"experiment": experiment, "trials": trials, "uuids": uuids}


def test_create_list_describe(master: LiveMaster, config_file: Path, model_dir: Path) -> None:
    created = run(
        master,
        "experiment",
        "create",
        str(config_file),
        str(model_dir),
        "--paused",
        "--config",
        "name=from-cli",
    )
    assert created.exit_code == 0, created.output
    assert "Created experiment " in created.output and "(PAUSED)" in created.output
    exp_id = int(created.output.split("Created experiment ")[1].split()[0])

    listed = run(master, "experiment", "list", "--json")
    assert listed.exit_code == 0, listed.output
    mine = [e for e in json.loads(listed.output) if e["id"] == exp_id]
    assert mine and mine[0]["name"] == "from-cli" and mine[0]["state"] == "PAUSED"

    table = run(master, "experiment", "list", "--state", "paused")
    assert table.exit_code == 0 and "from-cli" in table.output and "Experiments" in table.output

    described = run(master, "experiment", "describe", str(exp_id))
    assert described.exit_code == 0, described.output
    assert f"Experiment {exp_id}" in described.output and "val_loss (smaller is better)" in (
        described.output
    )
    as_json = json.loads(run(master, "experiment", "describe", str(exp_id), "--json").output)
    assert as_json["id"] == exp_id and as_json["trials"] == []


def test_actions(master: LiveMaster, experiment: Experiment) -> None:
    for action, state in (("pause", "PAUSED"), ("activate", "ACTIVE"), ("kill", "STOPPING_KILLED")):
        result = run(master, "experiment", action, str(experiment.id))
        assert result.exit_code == 0, result.output
        assert f"Experiment {experiment.id}: {state}" in result.output
    refused = run(master, "experiment", "pause", str(experiment.id))
    assert refused.exit_code == 1
    assert f"Error: cannot pause experiment {experiment.id}: it is STOPPING_KILLED" in (
        refused.output
    )
    assert "Traceback" not in refused.output


def test_wait_shows_progress_then_the_best_trial(
    master: LiveMaster, finished: dict[str, Any]
) -> None:
    experiment = finished["experiment"]
    threading.Timer(
        0.3, master.set_experiment_state, (experiment.id, ExperimentState.COMPLETED)
    ).start()
    result = run(master, "experiment", "wait", str(experiment.id), "--interval", "0.05")
    assert result.exit_code == 0, result.output
    assert "trials: 2 done, 0 running, 0 queued" in result.output
    assert "best val_loss=0.1" in result.output
    assert f"Experiment {experiment.id} ended: COMPLETED" in result.output
    best_trial = finished["trials"][1]
    assert f"Best trial: {best_trial} (val_loss = 0.1), checkpoint: {finished['uuids'][1]}" in (
        result.output
    )


def test_create_follow_exits_1_when_not_completed(
    master: LiveMaster, client: Client, config_file: Path, model_dir: Path
) -> None:
    before = {e.id for e in client.list_experiments()}

    def stop_the_new_experiment() -> None:
        deadline = time.monotonic() + scaled(20)
        while time.monotonic() < deadline:
            new = [e for e in client.list_experiments() if e.id not in before]
            if new:
                new[0].kill()
                master.set_experiment_state(new[0].id, ExperimentState.CANCELED)
                return
            time.sleep(0.05)

    thread = threading.Thread(target=stop_the_new_experiment)
    thread.start()
    result = run(master, "experiment", "create", str(config_file), str(model_dir), "--follow")
    thread.join()
    assert result.exit_code == 1, result.output
    assert "ended: CANCELED" in result.output


def test_trials_checkpoints_and_downloads(
    master: LiveMaster, finished: dict[str, Any], tmp_path: Path
) -> None:
    exp_id = str(finished["experiment"].id)
    best_uuid, best_trial = finished["uuids"][1], finished["trials"][1]

    trials = run(master, "experiment", "list-trials", exp_id)
    assert trials.exit_code == 0 and "best val_loss" in trials.output
    assert (
        json.loads(run(master, "experiment", "list-trials", exp_id, "--json").output)[1][
            "best_checkpoint_uuid"
        ]
        == best_uuid
    )

    best = json.loads(
        run(master, "experiment", "list-checkpoints", exp_id, "--best", "1", "--json").output
    )
    assert [c["uuid"] for c in best] == [best_uuid]
    table = run(master, "experiment", "list-checkpoints", exp_id)
    assert all(uuid in table.output for uuid in finished["uuids"])

    out = tmp_path / "exp-dl"
    downloaded = run(master, "experiment", "download", exp_id, "--output-dir", str(out))
    assert downloaded.exit_code == 0, downloaded.output
    assert (out / best_uuid / "w.bin").read_bytes() == b"w" * 9
    assert [p.name for p in out.iterdir()] == [best_uuid]

    described = run(master, "checkpoint", "describe", best_uuid)
    assert described.exit_code == 0 and "val_loss=0.1" in described.output
    assert "w.bin" in described.output
    assert (
        json.loads(run(master, "checkpoint", "describe", best_uuid, "--json").output)["trial_id"]
        == best_trial
    )
    single = run(master, "checkpoint", "download", best_uuid, "-o", str(tmp_path / "one"))
    assert single.exit_code == 0 and (tmp_path / "one" / "w.bin").exists()

    trial = run(master, "trial", "describe", str(best_trial), "--metrics")
    assert trial.exit_code == 0 and f"Trial {best_trial}" in trial.output
    assert "validation" in trial.output and "val_loss=0.1" in trial.output
    data = json.loads(
        run(master, "trial", "describe", str(best_trial), "--json", "--metrics").output
    )
    assert [row["kind"] for row in data["metrics"]] == ["training", "validation"]
    assert [c["uuid"] for c in data["checkpoints"]] == [best_uuid]

    logs = run(master, "trial", "logs", str(best_trial), "--follow")
    assert logs.exit_code == 0 and logs.output == "hello from the trial\n"

    killed = run(master, "trial", "kill", str(best_trial))
    assert killed.exit_code == 1 and "already ended (COMPLETED)" in killed.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["experiment", "describe", "2147483000"], "Error: experiment 2147483000 not found"),
        (["experiment", "wait", "2147483000"], "Error: experiment 2147483000 not found"),
        (["trial", "logs", "2147483000"], "Error: trial 2147483000 not found"),
        (
            ["checkpoint", "download", "00000000-0000-0000-0000-000000000000"],
            "Error: checkpoint 00000000-0000-0000-0000-000000000000 not found",
        ),
        (["checkpoint", "describe", "nope"], "path.checkpoint_uuid"),
    ],
)
def test_unknown_ids_exit_1_with_the_message(
    master: LiveMaster, args: list[str], message: str
) -> None:
    result = run(master, *args)
    assert result.exit_code == 1
    assert message in result.output and "Traceback" not in result.output


def test_bad_config_shows_every_field(
    master: LiveMaster, tmp_path: Path, storage: Path, model_dir: Path
) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(CONFIG_YAML.format(storage=storage).replace("name: single", "name: sideways"))
    result = run(master, "experiment", "create", str(bad), str(model_dir))
    assert result.exit_code == 1
    assert "Error: invalid experiment config" in result.output
    assert "config.searcher.name (line 6)" in result.output
    override = run(
        master,
        "experiment",
        "create",
        str(bad),
        str(model_dir),
        "--config",
        "searcher.name=single",
        "--config",
        "resources.slots_per_trial=-1",
    )
    assert override.exit_code == 1
    assert "config.resources.slots_per_trial" in override.output
    assert "searcher.name" not in override.output


def test_unreachable_master_via_env(tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{unused_port()}"
    result = CliRunner().invoke(cli, ["experiment", "list"], env={"PEDL_MASTER": url})
    assert result.exit_code == 1
    assert f"Error: cannot reach the PEDL master at {url}" in result.output
    assert "Traceback" not in result.output


def test_local_flags_are_not_for_master_mode(config_file: Path, model_dir: Path) -> None:
    result = CliRunner().invoke(
        cli, ["experiment", "create", "--local", "--follow", str(config_file), str(model_dir)]
    )
    assert result.exit_code == 2 and "--paused and --follow apply to experiments on a master" in (
        result.output
    )
