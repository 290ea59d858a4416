"""``det agent disable|enable`` and ``det slot disable|enable`` on a real master (2 CPU slots)
running a framework-free Core API script (``tests/compat/models/det038_core_api``): a
disabled slot takes no trial (one trial at a time), enabled again two run together; an agent
disabled with ``--drain`` lets its running trial finish and starts no new one until it is
enabled; disabled without it, the running trial checkpoints and stops, and after ``agent
enable`` resumes from that checkpoint and completes with nothing lost (no restart spent). The
settings survive a restart of the master."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.accounts import ADMIN, ADMIN_PASSWORD
from tests.cli.test_det_command import DET, det_env
from tests.waits import scaled

from .e2e import MasterProcess, create_experiment, logs, metric_rows, trials, wait_for

pytestmark = pytest.mark.slow

MODEL = Path(__file__).parents[1] / "compat" / "models" / "det038_core_api"
CONFIG = """
name: {name}
entrypoint: python3 train.py --steps {steps}
hyperparameters:
  increment_by: {increment_by}
searcher: {{name: {searcher}, metric: x}}
max_restarts: 0
environment:
  environment_variables: [PEDL_TEST_STEP_DELAY={delay}]
"""
SLOT_HEADERS = [
    "Agent ID",
    "Resource Pool",
    "Slot ID",
    "Enabled",
    "Draining",
    "Allocation ID",
    "Task Name",
    "Type",
    "Device",
]
AGENT_HEADERS = [
    "Agent ID",
    "Version",
    "Registered Time",
    "Slots",
    "Containers",
    "Resource Pool",
    "Enabled",
    "Draining",
    "Addresses",
]


def config(
    name: str, *, grid: bool = False, steps: int = 60, delay: float = 0.1, increment_by: int = 3
) -> str:
    return CONFIG.format(
        name=name,
        steps=steps,
        searcher="grid" if grid else "single",
        increment_by="{type: categorical, vals: [3, 4]}" if grid else increment_by,
        delay=delay,
    )


@pytest.fixture(scope="module")
def master(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MasterProcess]:
    process = MasterProcess(tmp_path_factory.mktemp("master"), cpu_slots=2).start()
    try:
        yield process
    finally:
        process.stop()


def det(master: MasterProcess, *args: str) -> subprocess.CompletedProcess[str]:
    env = det_env(
        master.home / "det-config",
        DET_MASTER=master.url.removeprefix("http://"),
        DET_USER=ADMIN,
        DET_PASS=ADMIN_PASSWORD,
    )
    return subprocess.run(
        [str(DET), *args], env=env, capture_output=True, text=True, timeout=scaled(120)
    )


def table(text: str, headers: list[str]) -> list[list[str]]:
    lines = text.rstrip("\n").split("\n")
    assert [c.strip() for c in lines[0].split("|")] == headers, text
    return [[c.strip() for c in line.split("|")] for line in lines[2:]]


def until(check: Callable[[], bool], what: str, timeout: float = 180) -> None:
    deadline = time.monotonic() + scaled(timeout)
    while not check():
        assert time.monotonic() < deadline, what
        time.sleep(0.1)


def cluster(master: MasterProcess) -> dict[str, Any]:
    body: dict[str, Any] = master.http.get("/cluster").json()
    return body


def validations(master: MasterProcess, trial_id: int) -> list[tuple[int, float]]:
    rows = metric_rows(master.http, trial_id)
    return [(b, m["x"]) for kind, b, m in rows if kind == "validation"]


def test_a_disabled_slot_takes_no_trial(master: MasterProcess) -> None:
    disabled = det(master, "slot", "disable", "master", "1")
    assert disabled.returncode == 0, disabled.stderr
    assert disabled.stdout == "Disabled slot 1 of agent master\n"
    slots = table(det(master, "slot", "list").stdout, SLOT_HEADERS)
    assert [r[:5] for r in slots] == [
        ["master", "default", "0", "True", "False"],
        ["master", "default", "1", "False", "False"],
    ]
    assert slots[0][5:8] == ["FREE", "FREE", "cpu"]

    one_at_a_time = create_experiment(master.http, config("one-slot", grid=True, steps=30), MODEL)
    most, waited = 0, False
    while master.http.get(f"/experiments/{one_at_a_time}").json()["state"] == "ACTIVE":
        state = cluster(master)
        most = max(most, state["slots_used"])
        waited = waited or any("1 disabled" in str(t["reason"]) for t in state["queued"])
        time.sleep(0.05)
    wait_for(master.http, one_at_a_time, {"COMPLETED"}, master=master)
    assert most == 1 and waited

    enabled = det(master, "slot", "enable", "master", "1")
    assert enabled.returncode == 0 and enabled.stdout == "Enabled slot 1 of agent master\n"
    together = create_experiment(master.http, config("two-slots", grid=True), MODEL)
    until(lambda: cluster(master)["slots_used"] == 2, "two trials run together")
    slots = table(det(master, "s", "ls").stdout, SLOT_HEADERS)
    assert all(r[3] == "True" and r[6].startswith("Trial ") for r in slots), slots
    wait_for(master.http, together, {"COMPLETED"}, timeout=240, master=master)


def test_agent_disable_drain_lets_the_running_trial_finish(master: MasterProcess) -> None:
    running = create_experiment(master.http, config("drained"), MODEL)
    until(lambda: len(cluster(master)["running"]) == 1, "the first trial runs")
    (trial,) = trials(master.http, running)
    drained = det(master, "agent", "disable", "--drain", "master")
    assert drained.returncode == 0, drained.stderr
    assert drained.stderr == "Disabled agent master.\n"
    lines = drained.stdout.splitlines()
    assert lines[0] == "Tasks still in progress on draining nodes."
    assert f"Trial {trial['id']} (Experiment {running})" in lines[3]
    agents = table(det(master, "agent", "list").stdout, AGENT_HEADERS)
    assert agents[0][0] == "master" and agents[0][3] == "2" and agents[0][6:8] == ["False", "True"]

    waiting = create_experiment(master.http, config("waits", steps=10, delay=0), MODEL)
    wait_for(master.http, running, {"COMPLETED"}, master=master)
    (finished,) = trials(master.http, running)
    assert finished["restarts"] == 0 and "PREEMPTED" not in logs(master.http, finished["id"])
    # A new trial is ACTIVE until the scheduler's next tick queues it.
    until(
        lambda: [t["state"] for t in trials(master.http, waiting)] == ["QUEUED"],
        "the second experiment's trial waits",
    )
    (queued,) = trials(master.http, waiting)
    reasons = [t["reason"] for t in cluster(master)["queued"] if t["trial_id"] == queued["id"]]
    assert reasons and "is disabled" in reasons[0], reasons
    halted = cluster(master)["halted"]  # the cluster's own answer says why nothing starts
    assert halted and "agent 'master' is disabled (draining)" in halted, halted
    assert "starting the trial process" not in logs(master.http, queued["id"])

    assert det(master, "agent", "enable", "master").returncode == 0
    wait_for(master.http, waiting, {"COMPLETED"}, master=master)
    assert cluster(master)["halted"] is None


def test_agent_disable_stops_the_running_trial_and_enable_resumes_it(
    master: MasterProcess,
) -> None:
    experiment_id = create_experiment(master.http, config("stopped"), MODEL)
    until(lambda: bool(trials(master.http, experiment_id)), "the trial exists")
    (trial,) = trials(master.http, experiment_id)
    until(
        lambda: bool(master.http.get(f"/trials/{trial['id']}").json()["latest_checkpoint_uuid"]),
        "a first checkpoint",
    )
    disabled = det(master, "a", "disable", "--all")
    assert disabled.returncode == 0 and disabled.stderr == "Disabled agent master.\n"
    until(lambda: "stopped: PREEMPTED" in logs(master.http, trial["id"]), "the trial stops")
    until(lambda: not cluster(master)["running"], "no trial runs")
    stopped_at = max(b for b, _ in validations(master, trial["id"]))
    assert stopped_at < 60
    assert master.http.get(f"/trials/{trial['id']}").json()["state"] in ("QUEUED", "ACTIVE")

    assert det(master, "agent", "enable", "--all").returncode == 0
    wait_for(master.http, experiment_id, {"COMPLETED"}, timeout=240, master=master)
    (done,) = trials(master.http, experiment_id)
    assert done["state"] == "COMPLETED" and done["restarts"] == 0
    assert validations(master, done["id"]) == [(b, 3 * b) for b in range(10, 70, 10)]
    assert f"resumed at batch {stopped_at} (x={3 * stopped_at})" in logs(master.http, done["id"])


def test_slot_disable_stops_its_trial_and_a_restart_keeps_it(master: MasterProcess) -> None:
    experiment_id = create_experiment(master.http, config("slot-stopped"), MODEL)
    until(lambda: len(cluster(master)["running"]) == 1, "the trial runs")
    (trial,) = trials(master.http, experiment_id)
    until(
        lambda: bool(master.http.get(f"/trials/{trial['id']}").json()["latest_checkpoint_uuid"]),
        "a first checkpoint",
    )
    slots = master.http.get("/agents/master/slots").json()
    (held,) = [s["slot_id"] for s in slots if s["trial_id"] == trial["id"]]
    assert det(master, "slot", "disable", "master", str(held)).returncode == 0
    # it checkpoints and stops, then runs again on the other slot
    until(lambda: "stopped: PREEMPTED" in logs(master.http, trial["id"]), "the trial stops")
    until(
        lambda: any(
            s["trial_id"] == trial["id"] and s["slot_id"] != held
            for s in master.http.get("/agents/master/slots").json()
        ),
        "the trial runs on the other slot",
    )
    wait_for(master.http, experiment_id, {"COMPLETED"}, timeout=240, master=master)
    (done,) = trials(master.http, experiment_id)
    assert done["restarts"] == 0
    assert validations(master, done["id"]) == [(b, 3 * b) for b in range(10, 70, 10)]

    master.stop()
    master.http = type(master.http)(base_url=master.url + "/api/v1", timeout=scaled(30))
    master.start()
    slots = master.http.get("/agents/master/slots").json()
    assert [s["enabled"] for s in slots] == [held != 0, held != 1]
    assert det(master, "slot", "enable", "master", str(held)).returncode == 0
    assert all(s["enabled"] for s in master.http.get("/agents/master/slots").json())
