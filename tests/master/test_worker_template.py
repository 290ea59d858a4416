"""The warm worker template through a real master (``python -m pedl.master`` with spare
workers, as its defaults have them): one process imports the framework and forks the spares
and every later worker of their environment; a forked worker trains bit for bit as the spare
before it (and a spare as a fresh process: ``test_spare_workers``); its exit status comes from
the template; a template that dies takes its idle workers with it and leaves new workers to
start as processes of their own; and the template and its workers die with the master."""

from __future__ import annotations

import base64
import logging
import os
import re
import signal
from functools import partial
from pathlib import Path
from typing import Any

import httpx
import psutil
import pytest

from pedl.master import MasterSettings, create_app
from pedl.master.api._app import make_database
from pedl.master.orchestrator import Orchestrator
from pedl.master.rm import LocalResourceManager
from pedl.master.rm import _template as template_module
from tests.waits import scaled, until

from .e2e import (
    MasterProcess,
    create_experiment,
    final_weights,
    free_port,
    logs,
    trials,
    wait_for,
)
from .helpers import LiveServer, make_archive, sign_in
from .test_rm_contract import Recorder
from .test_spare_workers import CONFIG
from .test_worker_exits import CONFIG as REJECTING_CONFIG
from .test_worker_exits import REJECTING_MODEL

pytestmark = pytest.mark.slow


def _children(parent: psutil.Process, module: str) -> list[psutil.Process]:
    """``parent``'s children running ``python -m module``, leaving out those that end while
    they are looked at (a retired template is a zombie until it is waited for)."""
    found = []
    for child in parent.children():
        try:
            if module in child.cmdline():
                found.append(child)
        except psutil.NoSuchProcess:  # ZombieProcess too
            continue
    return found


def _template(master: MasterProcess) -> psutil.Process:
    """The master's one child that is a worker template."""
    assert master.proc is not None
    (template,) = _children(psutil.Process(master.proc.pid), "pedl.exec.template")
    return template


def _idle(master: MasterProcess, count: int) -> list[dict[str, Any]]:
    def listed() -> list[dict[str, Any]] | None:
        idle = list(master.http.get("/cluster").json()["idle_workers"])
        return idle if len(idle) == count else None

    found: list[dict[str, Any]] = until(listed, f"{count} idle workers", timeout=180)
    return found


def _run(master: MasterProcess) -> tuple[str, bytes]:
    """Run CONFIG to completion: its trial's log and final weights."""
    experiment_id = create_experiment(master.http, CONFIG)
    wait_for(master.http, experiment_id, {"COMPLETED"}, timeout=240, master=master)
    (trial,) = trials(master.http, experiment_id)
    checkpoints = master.home / "pedl" / "checkpoints"
    return logs(master.http, trial["id"]), final_weights(checkpoints, trial)


def test_spares_and_later_workers_are_forked_from_one_template(tmp_path: Path) -> None:
    master = MasterProcess(tmp_path, cpu_slots=2, env={"PEDL_SPARE_WORKERS": "2"}).start()
    try:
        spares = _idle(master, 2)
        template = _template(master)
        assert {w["pid"] for w in spares} == {c.pid for c in template.children()}
        assert {w["spare"] for w in spares} == {True}
        # Two experiments take the spares; the third's worker is forked when its trial needs
        # it (the first experiment's idle worker makes room).
        runs = [_run(master) for _ in range(3)]
        assert "the trial runs in the spare warm worker process" in runs[0][0]
        assert "the trial runs in the spare warm worker process" in runs[1][0]
        assert "forked from the warm worker template (no framework import)" in runs[2][0]
        assert runs[0][1] == runs[1][1] == runs[2][1]
        assert _template(master).pid == template.pid
    finally:
        master.stop()


def test_exits_come_from_the_template_and_a_dead_template_is_not_used(tmp_path: Path) -> None:
    master = MasterProcess(tmp_path, cpu_slots=1, env={"PEDL_SPARE_WORKERS": "1"}).start()
    try:
        (spare,) = _idle(master, 1)
        os.kill(spare["pid"], signal.SIGTERM)

        def exits() -> list[dict[str, Any]]:
            return list(master.http.get("/cluster").json()["worker_exits"])

        (gone,) = until(exits, "the spare's exit on the cluster", timeout=60)
        assert gone["pid"] == spare["pid"] and gone["exit"] == "signal SIGTERM"
        template = _template(master)
        template.kill()
        template.wait(scaled(30))
        until(lambda: "the warm worker template" in master.log(), "the master's line", timeout=60)
        assert f"the warm worker template {template.pid} failed" in master.log()
        log, _ = _run(master)
        assert "the trial runs in a new warm worker process" in log
        assert "forked" not in log
    finally:
        master.stop()


def test_the_template_and_its_workers_die_with_the_master(tmp_path: Path) -> None:
    master = MasterProcess(tmp_path, cpu_slots=2, env={"PEDL_SPARE_WORKERS": "2"}).start()
    try:
        _idle(master, 2)
        template = _template(master)
        processes = [template, *template.children()]
        assert len(processes) == 3
        master.sigkill()
        _, alive = psutil.wait_procs(processes, timeout=scaled(60))
        assert alive == []
    finally:
        master.stop()


OWN_ENV_CONFIG = REJECTING_CONFIG + "environment: {environment_variables: [PEDL_TEST_OWN=1]}\n"


def _templates() -> list[int]:
    """This process's children that are worker templates."""
    return [child.pid for child in _children(psutil.Process(), "pedl.exec.template")]


def test_without_spares_a_trial_starts_the_template_which_retires_when_idle(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A master without spares (an in-process one, whose workers retire after 1 s idle) starts
    no template until a trial needs a worker; then its worker is forked from the template
    started for it; once no worker of it is left, the template goes too, and the next trial
    starts another. While the trial waits for the template to get ready (it is stopped
    meanwhile), the cluster page says so, and a trial of an experiment with environment
    variables of its own (a process of its own) starts and ends."""
    port = free_port()
    settings = MasterSettings(home=tmp_path / "home", cpu_slots=2, spare_workers=0)
    database = make_database(settings)

    def resource_manager(**kwargs: Any) -> LocalResourceManager:
        return LocalResourceManager(
            cpu_slots=2, reuse_workers=True, worker_idle_seconds=1.0, worker_template=True, **kwargs
        )

    orchestrator = Orchestrator(
        database, settings, master_url=f"http://127.0.0.1:{port}", resource_manager=resource_manager
    )
    app = create_app(settings, database=database, orchestrator=orchestrator)
    archive = base64.b64encode(make_archive(REJECTING_MODEL)).decode()
    caplog.set_level(logging.INFO, logger="pedl.master")
    try:
        with (
            LiveServer(app, port=port) as server,
            httpx.Client(
                base_url=server.url + "/api/v1", timeout=scaled(30), headers=sign_in(database)
            ) as http,
        ):
            assert _templates() == []
            for round_ in range(2):
                response = http.post(
                    "/experiments", json={"config": REJECTING_CONFIG, "model_definition": archive}
                )
                assert response.status_code == 201, response.text
                experiment_id = response.json()["id"]

                def ended(experiment_id: int = experiment_id) -> dict[str, Any] | None:
                    items = http.get(f"/experiments/{experiment_id}/trials").json()["items"]
                    return items[0] if items and items[0]["outcome"] == "INVALID_HP" else None

                if round_ == 0:  # the trial waits for the stopped template; nothing else does
                    pid = until(_templates, "the trial to start the template", timeout=60)[0]
                    os.kill(pid, signal.SIGSTOP)
                    try:

                        def queued_for() -> bool:
                            queued = http.get("/cluster").json()["queued"]
                            return any("worker template to import" in t["reason"] for t in queued)

                        until(queued_for, "the trial queued for the template")
                        response = http.post(
                            "/experiments",
                            json={"config": OWN_ENV_CONFIG, "model_definition": archive},
                        )
                        assert response.status_code == 201, response.text
                        other = until(
                            partial(ended, response.json()["id"]),
                            "a trial of an experiment with its own environment to end",
                            timeout=120,
                        )
                        assert ended(experiment_id) is None  # still waiting for the template
                    finally:
                        os.kill(pid, signal.SIGCONT)
                    lines = http.get(f"/trials/{other['id']}/logs").json()
                    assert not any("forked" in line["message"] for line in lines), lines

                trial = until(ended, "the trial to reject its hyperparameters", timeout=120)
                lines = http.get(f"/trials/{trial['id']}/logs").json()
                assert any(
                    "forked from the warm worker template" in line["message"] for line in lines
                ), lines
                until(lambda: _templates() == [], "the idle template to be retired", timeout=60)
            events = re.findall(r"(started|retired) the warm worker template (\d+)", caplog.text)
            a, b = dict.fromkeys(pid for _, pid in events)  # in order, once each
            assert events == [("started", a), ("retired", a), ("started", b), ("retired", b)]
    finally:
        database.dispose()


def test_a_template_that_never_gets_ready_is_killed_and_spares_start_without_it(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A template stopped before it has imported the framework is failed once
    ``READY_TIMEOUT_S`` (here 3 s, from when it is stopped) has passed since its start: it is
    killed, since it forked no worker, and the spare starts as a process of its own."""
    caplog.set_level(logging.INFO, logger="pedl.master")
    rec = Recorder()
    rm = LocalResourceManager(
        cpu_slots=1,
        on_exit=rec.on_exit,
        log_sink=rec.sink,
        gpus=[],
        reuse_workers=True,
        spare_workers=1,
        worker_template=True,
    )
    try:
        rm.prepare("http://127.0.0.1:1")
        (pid,) = until(_templates, "the template", timeout=60)
        os.kill(pid, signal.SIGSTOP)
        monkeypatch.setattr(template_module, "READY_TIMEOUT_S", 3.0)
        until(lambda: not psutil.pid_exists(pid), "the stopped template to be killed", timeout=60)
        assert (
            f"the warm worker template {pid} failed: it did not answer as a template does"
            in caplog.text
        )
        assert _templates() == []
        spare = until(_own_workers, "the spare, a process of its own", timeout=60)
        assert len(spare) == 1
    finally:
        rm.shutdown()


def _own_workers() -> list[int]:
    """This process's children that are warm workers of their own (not forked)."""
    return [child.pid for child in _children(psutil.Process(), "pedl.exec.worker")]
