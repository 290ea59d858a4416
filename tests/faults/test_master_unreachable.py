"""The master unreachable for a while: trials keep training and catch up.

Trial processes reach the master through a TCP proxy (the master's ``advertised_url``) that
the test makes go dark: it cuts the open connections and resets new ones, while the master
itself runs on. The trial queues its reports (metrics, checkpoint registrations) and goes on
training; once the line is back they arrive, in order, and the experiment ends exactly as an
undisturbed run: COMPLETED, no restart, every metric row once, the same final weights.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from pedl.db import Database
from pedl.exec import MasterClient, MasterError, ReportSender, RestBackend
from pedl.master import MasterSettings, create_app
from tests.faults.proxy import Proxy
from tests.master.e2e import (
    MasterProcess,
    create_experiment,
    final_weights,
    logs,
    metric_rows,
    trials,
    wait_for,
)
from tests.master.helpers import LiveServer, create_trial, sign_in
from tests.master.helpers import create_experiment as create_api_experiment
from tests.waits import scaled

CONFIG = """
name: {name}
hyperparameters: {{global_batch_size: 16, lr: 0.01}}
searcher:
  name: single
  metric: val_accuracy
  smaller_is_better: false
  max_length: {{batches: {total}}}
scheduling_unit: 5
min_validation_period: {{batches: 10}}
min_checkpoint_period: {{batches: 5}}
checkpoint_policy: all
max_restarts: 0
reproducibility: {{experiment_seed: 5}}
environment:
  environment_variables: [PEDL_TEST_SLEEP=0.05]
"""
TOTAL_BATCHES = 100
"""Long enough (5 s of 0.05 s batches) that the trial is still training when the test, which
polls the master for the first validation row (batch 10), makes the line go dark."""
TRAINED_WHILE_DARK = 10
"""Batches the trial must train while the master is unreachable: two checkpoint periods, so
at least one chunk boundary's reports (metrics, checkpoint) could not have been delivered
(a trial that waited for the master would stop at its first one)."""


def row(batches: int, kind: str = "training") -> dict[str, Any]:
    return {"rows": [{"kind": kind, "total_batches": batches, "metrics": {"loss": 1.0}}]}


class ApiMaster:
    """The master's API (no orchestrator) on a SQLite file, served over HTTP, with one trial
    and its token; trials' requests go through a proxy."""

    def __init__(self, home: Path) -> None:
        url = f"sqlite:///{home / 'pedl.db'}"
        self.database = Database(url)
        self.database.upgrade()
        self.server = LiveServer(
            create_app(MasterSettings(home=home, db_url=url), database=self.database)
        )
        self.server.start()
        self.http = httpx.Client(
            base_url=self.server.url + "/api/v1", timeout=scaled(30), headers=sign_in(self.database)
        )
        experiment = create_api_experiment(self.http)
        self.trial_id, self.token = create_trial(self.database, experiment["id"])

    def batches(self) -> list[int]:
        answer = self.http.get(f"/trials/{self.trial_id}/metrics")
        assert answer.status_code == 200, answer.text
        return [r["total_batches"] for r in answer.json()]

    def close(self) -> None:
        self.http.close()
        self.server.stop()
        self.database.dispose()


@pytest.fixture
def api_master(tmp_path: Path) -> Iterator[ApiMaster]:
    master = ApiMaster(tmp_path)
    try:
        yield master
    finally:
        master.close()


@pytest.fixture
def proxy(api_master: ApiMaster) -> Iterator[Proxy]:
    port = int(api_master.server.url.rsplit(":", 1)[1])
    with Proxy(port) as proxy:
        yield proxy


def test_reports_are_queued_while_dark_and_arrive_in_order(
    api_master: ApiMaster, proxy: Proxy
) -> None:
    client = MasterClient(proxy.url, api_master.trial_id, api_master.token, give_up_after=60)
    sender = ReportSender(client)
    preemption = RestBackend(client, sender)
    try:
        sender.send(f"/trials/{api_master.trial_id}/metrics", row(1))
        sender.flush()
        proxy.go_dark()
        for batches in (2, 3, 4):
            sender.send(f"/trials/{api_master.trial_id}/metrics", row(batches))
        # The trainer was not held up: the reports wait in the queue, the master has none of
        # them, and the preemption poll answers from its last answer instead of waiting.
        assert sender.waiting == 3
        assert api_master.batches() == [1]
        wait_until("the sender has tried while dark", lambda: proxy.refused > 0)
        assert preemption.should_preempt() is False
        proxy.light_up()
        sender.flush()
        assert sender.waiting == 0
        assert api_master.batches() == [1, 2, 3, 4]
        # Reachable again, the poll asks the master; this one runs no orchestrator and
        # refuses (409): a 4xx is raised, not answered from the last answer.
        with pytest.raises(MasterError) as info:
            preemption.should_preempt()
        assert info.value.status == 409
    finally:
        sender.close()
        client.close()


def test_settle_waits_for_a_reachable_master_only(api_master: ApiMaster, proxy: Proxy) -> None:
    """What a checkpoint registration does: wait until the master has every report while it
    answers, so a kill right after cannot lose them; while it is dark, go on."""
    client = MasterClient(proxy.url, api_master.trial_id, api_master.token, give_up_after=60)
    sender = ReportSender(client)
    path = f"/trials/{api_master.trial_id}/metrics"
    try:
        for batches in (1, 2, 3):
            sender.send(path, row(batches))
        assert sender.settle(timeout=scaled(30)) is True
        # settle() returned: the master has them all, not just the queue.
        assert api_master.batches() == [1, 2, 3]
        proxy.go_dark()
        sender.send(path, row(4))
        wait_until("the sender has tried while dark", lambda: proxy.refused > 0)
        assert sender.settle(timeout=30) is False
        assert sender.waiting == 1
        assert api_master.batches() == [1, 2, 3]
        proxy.light_up()
        sender.flush()  # the retry after the client's back-off delivers it
        assert api_master.batches() == [1, 2, 3, 4]
        # Reachable again (the latest try succeeded), settle waits as before.
        sender.send(path, row(5))
        assert sender.settle(timeout=scaled(30)) is True
        assert api_master.batches() == [1, 2, 3, 4, 5]
    finally:
        sender.close()
        client.close()


def test_a_refused_report_is_raised_on_the_next_call(api_master: ApiMaster, proxy: Proxy) -> None:
    client = MasterClient(proxy.url, api_master.trial_id, api_master.token, give_up_after=60)
    sender = ReportSender(client)
    path = f"/trials/{api_master.trial_id}/metrics"
    try:
        sender.send(path, row(1))
        sender.send(path, row(2, kind="no-such-kind"))  # the master answers 422
        sender.send(path, row(3))
        with pytest.raises(MasterError) as info:
            sender.flush()
        assert info.value.status == 422
        # Sending stopped at the refused report: the one queued after it was not sent.
        assert api_master.batches() == [1]
        with pytest.raises(MasterError):
            sender.send(path, row(4))
    finally:
        sender.close()
        client.close()


# ---- end to end: a real master, a real trial process --------------------------------------


def stored_batches(checkpoint_dir: Path, others: set[str]) -> int:
    """The most batches of a checkpoint stored so far but for ``others`` (written to disk,
    whether or not the master has heard of it yet)."""
    most = 0
    for path in checkpoint_dir.iterdir():
        metadata = path / "metadata.json"
        if path.name not in others and not path.name.startswith(".") and metadata.is_file():
            most = max(most, int(json.loads(metadata.read_text())["steps_completed"]))
    return most


def wait_until(what: str, predicate: Any, *, timeout: float = 120) -> None:
    deadline = time.monotonic() + scaled(timeout)
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting until {what}"
        time.sleep(0.05)


@pytest.mark.slow
def test_a_trial_trains_on_while_the_master_is_unreachable_and_catches_up(
    tmp_path: Path,
) -> None:
    master = MasterProcess(tmp_path / "master", cpu_slots=1)
    checkpoint_dir = master.home / "pedl" / "checkpoints"
    with Proxy(master.port) as proxy:
        master.env["PEDL_ADVERTISED_URL"] = proxy.url
        master.start()
        try:
            baseline = create_experiment(
                master.http, CONFIG.format(name="calm", total=TOTAL_BATCHES)
            )
            wait_for(master.http, baseline, {"COMPLETED"}, master=master)
            (calm,) = trials(master.http, baseline)
            expected_rows = metric_rows(master.http, calm["id"])
            expected_weights = final_weights(checkpoint_dir, calm)
            calm_checkpoints = {p.name for p in checkpoint_dir.iterdir()}

            experiment = create_experiment(
                master.http, CONFIG.format(name="outage", total=TOTAL_BATCHES)
            )
            wait_until("the trial exists", lambda: trials(master.http, experiment))
            (trial,) = trials(master.http, experiment)
            wait_until(
                "the first validation row arrives",
                lambda: any(k == "validation" for k, _, _ in metric_rows(master.http, trial["id"])),
            )
            proxy.go_dark()
            dark_at = stored_batches(checkpoint_dir, calm_checkpoints)
            wait_until(
                f"the trial stores a checkpoint {TRAINED_WHILE_DARK} batches past {dark_at} "
                "while the master is unreachable",
                lambda: (
                    stored_batches(checkpoint_dir, calm_checkpoints) >= dark_at + TRAINED_WHILE_DARK
                ),
                timeout=scaled(60),
            )
            arrived_while_dark = metric_rows(master.http, trial["id"])
            proxy.light_up()

            wait_for(master.http, experiment, {"COMPLETED"}, master=master)
            (trial,) = trials(master.http, experiment)
            log = logs(master.http, trial["id"])
            assert proxy.refused > 0, "the trial never tried to reach the master while dark"
            assert max(b for _, b, _ in arrived_while_dark) <= dark_at + 5, arrived_while_dark
            assert trial["restarts"] == 0, log
            assert metric_rows(master.http, trial["id"]) == expected_rows
            assert final_weights(checkpoint_dir, trial) == expected_weights
        finally:
            master.stop()
