"""Helpers of the end-to-end tests: a real master process, experiments over real HTTP."""

from __future__ import annotations

import base64
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx

from pedl import model_def
from pedl.exec import free_ports
from tests.accounts import ADMIN, ADMIN_PASSWORD
from tests.waits import scaled

MODEL_DIR = Path(__file__).parent / "trial_model"
TERMINAL = {"COMPLETED", "CANCELED", "ERROR"}


def free_port() -> int:
    """A free loopback port below the kernel's range of ephemeral ports
    (:func:`pedl.exec.free_ports`). Tests stop masters and start them again on the same
    port; while one is down, a port in that range can be taken by any process's outgoing
    connection as its source port, or by a trial's own retry, which then connects to itself
    (TCP simultaneous open), and the restarted master fails with "address already in use"."""
    return free_ports(1)[0]


class MasterProcess:
    """``python -m pedl.master`` on a loopback port with its own home (and HOME).

    It starts no spare warm workers unless ``env`` asks for them (``PEDL_SPARE_WORKERS``):
    each imports TensorFlow as the master starts, whether the test runs a trial there or not
    (measured on five e2e files: 10% of their wall time, 8% of their CPU). The tests of spares
    ask for them; the masters that the README's and docs' commands start keep the default."""

    def __init__(
        self, home: Path, *, cpu_slots: int = 2, env: dict[str, str] | None = None
    ) -> None:
        self.home = home
        self.cpu_slots = cpu_slots
        self.env = env or {}
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen[bytes] | None = None
        self.http = httpx.Client(base_url=self.url + "/api/v1", timeout=scaled(30))

    def start(self) -> MasterProcess:
        self.home.mkdir(parents=True, exist_ok=True)
        env = {
            **os.environ,
            "HOME": str(self.home),
            "PEDL_HOME": str(self.home / "pedl"),
            "PEDL_HOST": "127.0.0.1",
            "PEDL_PORT": str(self.port),
            "PEDL_CPU_SLOTS": str(self.cpu_slots),
            "PEDL_MASTER_GIVE_UP_SECONDS": "20",
            "PEDL_SPARE_WORKERS": "0",
            "TF_CPP_MIN_LOG_LEVEL": "2",
        }
        # The test process's own database and config file are not the master's; what the
        # test passes in ``env`` is.
        env.pop("PEDL_DB_URL", None)
        env.pop("PEDL_CONFIG_FILE", None)
        env.update(self.env)
        with open(self.home / "master.log", "ab") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "pedl.master"],
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        deadline = time.monotonic() + scaled(60)
        while time.monotonic() < deadline:
            assert self.proc.poll() is None, self.log()
            try:
                if self.http.get("/health").status_code == 200:
                    self.sign_in()
                    return self
            except httpx.TransportError:
                pass
            time.sleep(0.1)
        raise AssertionError(f"the master did not start:\n{self.log()}")

    def sign_in(self, username: str = ADMIN, password: str = ADMIN_PASSWORD) -> None:
        """Sign ``http`` in (as the test administrator, whose password the master has from
        ``PEDL_ADMIN_PASSWORD``; see tests/conftest.py)."""
        response = self.http.post("/auth/login", json={"username": username, "password": password})
        assert response.status_code == 200, response.text
        self.http.headers["Authorization"] = f"Bearer {response.json()['token']}"

    def log(self) -> str:
        path = self.home / "master.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def sigkill(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=scaled(30))

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=scaled(30))
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.http.close()


def create_experiment(
    http: httpx.Client, config: str, model_dir: Path = MODEL_DIR, **extra: Any
) -> int:
    archive = base64.b64encode(model_def.package(model_dir)).decode()
    response = http.post(
        "/experiments", json={"config": config, "model_definition": archive, **extra}
    )
    assert response.status_code == 201, response.text
    experiment_id: int = response.json()["id"]
    return experiment_id


def experiment(http: httpx.Client, experiment_id: int) -> dict[str, Any]:
    response = http.get(f"/experiments/{experiment_id}")
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def trials(http: httpx.Client, experiment_id: int) -> list[dict[str, Any]]:
    response = http.get(f"/experiments/{experiment_id}/trials")
    assert response.status_code == 200, response.text
    items: list[dict[str, Any]] = response.json()["items"]
    return items


def logs(http: httpx.Client, trial_id: int) -> str:
    response = http.get(f"/trials/{trial_id}/logs", params={"limit": 10000})
    assert response.status_code == 200, response.text
    return "\n".join(line["message"] for line in response.json())


def wait_for(
    http: httpx.Client,
    experiment_id: int,
    states: set[str],
    *,
    timeout: float = 150,
    master: MasterProcess | None = None,
) -> dict[str, Any]:
    """Poll until the experiment is in one of ``states`` (``timeout`` :func:`~tests.waits.scaled`);
    fail with its trials' logs."""
    deadline = time.monotonic() + scaled(timeout)
    while True:
        body = experiment(http, experiment_id)
        if body["state"] in states:
            return body
        if body["state"] in TERMINAL or time.monotonic() > deadline:
            details = "\n".join(
                f"--- trial {t['id']} {t['state']}\n{logs(http, t['id'])}"
                for t in trials(http, experiment_id)
            )
            master_log = master.log()[-5000:] if master is not None else ""
            raise AssertionError(
                f"experiment {experiment_id} is {body['state']}, wanted {states}\n"
                f"{details}\n--- master\n{master_log}"
            )
        time.sleep(0.2)


def wait_trial(
    http: httpx.Client, trial_id: int, predicate: Any, *, timeout: float = 120
) -> dict[str, Any]:
    """Poll until ``predicate`` holds for the trial (``timeout`` :func:`~tests.waits.scaled`)."""
    deadline = time.monotonic() + scaled(timeout)
    while True:
        response = http.get(f"/trials/{trial_id}")
        body: dict[str, Any] = response.json()
        if predicate(body):
            return body
        assert time.monotonic() < deadline, f"{body}\n{logs(http, trial_id)}"
        time.sleep(0.1)


def final_weights(checkpoint_dir: Path, trial: dict[str, Any]) -> bytes:
    """The variables file of the trial's latest checkpoint (shared_fs under the master)."""
    uuid = trial["latest_checkpoint_uuid"]
    assert uuid, trial
    return (checkpoint_dir / uuid / "state" / "variables.bin").read_bytes()


def metric_rows(http: httpx.Client, trial_id: int) -> list[tuple[str, int, dict[str, Any]]]:
    response = http.get(f"/trials/{trial_id}/metrics")
    assert response.status_code == 200, response.text
    return [(r["kind"], r["total_batches"], r["metrics"]) for r in response.json()]
