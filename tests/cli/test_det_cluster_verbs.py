"""det 0.38.1's ``job update``/``update-batch`` and ``agent``/``slot`` ``enable``/``disable``
on a real master: a job is an experiment (its priority and weight change what the scheduler
does next); the one agent (the master) and its slots are disabled and enabled as det does
it."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner, Result

from pedl.cli import cli
from pedl.cli._det import det
from pedl.client import Client
from tests.client.helpers import LiveMaster, write_config, write_model_dir


def run_det(master: LiveMaster, *args: str) -> Result:
    return CliRunner().invoke(det, ["-m", master.url, *args])


def run_pedl(master: LiveMaster, *args: str) -> Result:
    return CliRunner().invoke(cli, ["--master", master.url, *args])


def _resources(client: Client, experiment_id: int) -> dict[str, object]:
    resources = client.get_experiment(experiment_id).config["resources"]
    assert isinstance(resources, dict)
    return resources


def test_job_update(master: LiveMaster, client: Client, tmp_path: Path) -> None:
    storage = tmp_path / "checkpoints"
    storage.mkdir()
    exp = client.create_experiment(
        write_config(tmp_path, storage), write_model_dir(tmp_path), activate=False
    )
    job = str(exp.id)
    updated = run_det(master, "job", "update", job, "-p", "7")
    assert updated.exit_code == 0 and updated.output == "", updated.output  # det prints nothing
    assert _resources(client, exp.id)["priority"] == 7
    weighted = run_pedl(master, "j", "update", job, "--weight", "2.5")
    assert weighted.exit_code == 0, weighted.output
    assert _resources(client, exp.id)["weight"] == 2.5

    batch = run_det(master, "job", "update-batch", f"{job}.priority=9", f"{job}.weight=4")
    assert batch.exit_code == 0, batch.output
    assert (_resources(client, exp.id)["priority"], _resources(client, exp.id)["weight"]) == (9, 4)
    bad_format = run_det(master, "job", "update-batch", f"{job}priority=9")
    assert bad_format.exit_code == 1 and "<jobID>.<operation>=<value>" in bad_format.output
    bad_op = run_det(master, "job", "update-batch", f"{job}.color=red")
    assert bad_op.exit_code == 1 and "Invalid operation color" in bad_op.output

    both = run_det(master, "job", "update", job, "-p", "3", "-w", "1")
    assert both.exit_code == 2 and "not allowed with" in both.output
    pool = run_det(master, "job", "update", job, "--resource-pool", "gpu")
    assert pool.exit_code == 1 and "resource pools" in pool.output
    not_an_id = run_det(master, "job", "update", "3f2a-uuid", "-p", "3")
    assert not_an_id.exit_code == 1 and "experiment ids" in not_an_id.output
    out_of_range = run_det(master, "job", "update", job, "-p", "0")
    assert out_of_range.exit_code == 1 and "priority" in out_of_range.output
    missing = run_det(master, "job", "update", "999999", "-p", "3")
    assert missing.exit_code == 1 and "not found" in missing.output.lower()


def test_agent_and_slot_enable_disable(master: LiveMaster, client: Client) -> None:
    """The checks of the arguments, and the settings as stored (this API-only master runs
    no trials: tests/master/test_agent_disable_e2e.py shows what the scheduler does)."""
    enabled = run_det(master, "agent", "enable", "master")
    assert enabled.exit_code == 0 and enabled.output == "Enabled agent master.\n"
    assert run_det(master, "a", "enable", "--all").exit_code == 0
    nothing = run_det(master, "agent", "enable")
    assert nothing.exit_code == 1 and "Please pass agent id or --all option" in nothing.output
    other = run_det(master, "agent", "enable", "gpu-node-7")
    assert other.exit_code == 1 and "not found" in other.output
    both = run_det(master, "agent", "disable", "master", "--all")
    assert both.exit_code == 2 and "not allowed with" in both.output

    disabled = run_det(master, "agent", "disable", "master")
    assert disabled.exit_code == 0 and disabled.output == "Disabled agent master.\n"
    assert client.session.get("/agents/master")["enabled"] is False
    drained = run_det(master, "agent", "disable", "--all", "--drain")
    assert drained.exit_code == 0, drained.output
    assert "No tasks in progress on draining nodes." in drained.output
    assert client.session.get("/agents/master")["draining"] is True
    listed = run_pedl(master, "agent", "list")
    assert listed.exit_code == 0 and "False" in listed.output, listed.output
    assert run_pedl(master, "agent", "enable", "master").exit_code == 0
    assert client.session.get("/agents/master")["enabled"] is True

    total = len(client.session.get("/agents/master")["slots"])
    beyond = run_det(master, "slot", "enable", "master", str(total))
    assert beyond.exit_code == 1 and "not found" in beyond.output
    beyond = run_det(master, "slot", "disable", "master", str(total))
    assert beyond.exit_code == 1 and "not found" in beyond.output
    assert run_det(master, "slot", "disable", "node-2", "0").exit_code == 1
