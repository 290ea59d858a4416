"""``pedl tensorboard`` on a real master over HTTP: the real ``tensorboard`` process, proxied
behind the master's sign-in, serving a finished and a running experiment's metrics as
scalars (a value the running trial reports after the start shows up) and the event file the
trial wrote itself (through its checkpoint storage), refusing anonymous
requests, and ending its process on ``stop`` and with the master.

One master and one TensorBoard serve every assertion (TensorBoard takes seconds to start);
the trials are a framework-free script (no TensorFlow)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner

from pedl.cli import cli
from tests.master.e2e import MasterProcess, create_experiment, trials, wait_for
from tests.waits import scaled, until

pytestmark = pytest.mark.slow

MODEL_DIR = Path(__file__).parent / "tensorboard_model"
CONFIG = """
name: tensorboard
entrypoint: {entrypoint}
hyperparameters: {{}}
searcher: {{name: single, metric: score, smaller_is_better: false}}
max_restarts: 0
"""


def _tensorboard_processes(board_id: str) -> list[int]:
    """The pids of processes serving TensorBoard ``board_id`` (by its path prefix)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if f"/tensorboard/{board_id}".encode() in cmdline:
            pids.append(int(entry.name))
    return pids


@pytest.fixture(scope="module")
def master(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MasterProcess]:
    process = MasterProcess(tmp_path_factory.mktemp("tensorboard-master")).start()
    try:
        yield process
    finally:
        process.stop()


def _cli(master: MasterProcess, *args: str) -> str:
    result = CliRunner().invoke(cli, ["--master", master.url, "tensorboard", *args])
    assert result.exit_code == 0, result.output
    return result.output


def test_tensorboard_requests_refused_with_reasons(master: MasterProcess) -> None:
    http = master.http
    cases = [
        ({}, 422, "experiment_ids"),
        ({"experiment_ids": [999999]}, 404, "experiment_ids[0]"),
        ({"trial_ids": [999999]}, 404, "trial_ids[0]"),
        ({"trial_ids": list(range(1, 102))}, 422, "trial_ids"),
        ({"experiment_ids": list(range(1, 102))}, 422, "experiment_ids"),
        ({"trial_ids": [0]}, 422, "body.trial_ids[0]"),
        ({"bogus": [1]}, 422, "bogus"),
    ]
    for body, status, field in cases:
        answer = http.post("/tensorboards", json=body)
        assert answer.status_code == status, (body, answer.text)
        assert field in answer.text, (body, answer.text)
    assert http.get("/tensorboards/" + "0" * 32).status_code == 404
    assert http.get("/tensorboards/not-an-id").status_code == 422
    assert (
        httpx.post(f"{master.url}/api/v1/tensorboards", json={"trial_ids": [1]}).status_code == 401
    )


def test_tensorboard_over_finished_and_running_experiments(
    master: MasterProcess, tmp_path: Path
) -> None:
    http = master.http
    finished = create_experiment(
        http, CONFIG.format(entrypoint="python3 train.py --steps 3"), MODEL_DIR
    )
    stop_file = tmp_path / "stop"
    running = create_experiment(
        http,
        CONFIG.format(entrypoint=f"python3 train.py --until {stop_file} --delay 0.2"),
        MODEL_DIR,
    )
    wait_for(http, finished, {"COMPLETED"}, master=master)
    running_trial = until(lambda: trials(http, running), "the running trial")[0]["id"]
    until(
        lambda: http.get(f"/trials/{running_trial}/metrics").json(),
        "a metric of the running trial",
    )
    finished_trial = trials(http, finished)[0]["id"]

    output = _cli(master, "start", str(finished), str(running))
    board_id = output.split()[1]
    assert f"{master.url}/tensorboard/{board_id}/" in output
    pids = _tensorboard_processes(board_id)
    assert len(pids) == 1, pids
    # Its own output (det's `tensorboard logs`): the line that said where it serves.
    assert re.search(r"TensorBoard \S+ at http://127\.0\.0\.1:\d+/", _cli(master, "logs", board_id))
    assert len(http.get(f"/tensorboards/{board_id}/logs", params={"tail": 1}).json()) == 1
    base = f"/tensorboard/{board_id}"
    signed_in = httpx.Client(base_url=master.url, headers=dict(http.headers), timeout=scaled(30))

    def scalars(trial: tuple[int, int], tag: str, sub: str = "") -> list[tuple[int, float]]:
        run = f"experiment_{trial[0]}/trial_{trial[1]}" + (f"/{sub}" if sub else "")
        answer = signed_in.get(
            f"{base}/data/plugin/scalars/scalars", params={"run": run, "tag": tag}
        )
        if answer.status_code != 200:
            return []
        return [(int(step), float(value)) for _wall, step, value in answer.json()]

    # The finished experiment: every reported value, training and validation.
    tags = until(
        lambda: (
            signed_in.get(f"{base}/data/plugin/scalars/tags")
            .json()
            .get(f"experiment_{finished}/trial_{finished_trial}")
        ),
        "the finished trial's tags",
    )
    assert {"PEDL/x", "PEDL/val_score"} <= set(tags)
    assert scalars((finished, finished_trial), "PEDL/x") == [(1, 1.0), (2, 2.0), (3, 3.0)]
    assert scalars((finished, finished_trial), "PEDL/val_score") == [
        (1, 0.5),
        (2, 1.0),
        (3, 1.5),
    ]

    # What the trial wrote itself (uploaded to its checkpoint storage, fetched from there).
    custom = until(
        lambda: (
            signed_in.get(f"{base}/data/plugin/scalars/tags")
            .json()
            .get(f"experiment_{finished}/trial_{finished_trial}/custom")
        ),
        "the trial's own event file",
    )
    assert set(custom) == {"user/y"}
    assert scalars((finished, finished_trial), "user/y", "custom") == [
        (1, 10.0),
        (2, 20.0),
        (3, 30.0),
    ]

    # The running one: a value reported after the start shows up, then its last one.
    at_start = max(
        step
        for step, _ in until(
            lambda: scalars((running, running_trial), "PEDL/x"), "the running trial's scalars"
        )
    )
    reported = until(
        lambda: [p for p in scalars((running, running_trial), "PEDL/x") if p[0] > at_start + 2],
        "a later value",
    )
    assert all(value == float(step) for step, value in reported)
    stop_file.touch()
    wait_for(http, running, {"COMPLETED"}, master=master)
    last = max(row["total_batches"] for row in http.get(f"/trials/{running_trial}/metrics").json())
    until(
        lambda: (last, float(last)) in scalars((running, running_trial), "PEDL/x"),
        "the running trial's last value",
    )

    # Refused without a sign-in (and with a made-up token or cookie); the cookie of the start
    # request admits a browser.
    for anonymous in (
        httpx.get(f"{master.url}{base}/data/plugin/scalars/tags"),
        httpx.get(f"{master.url}{base}/", headers={"Authorization": "Bearer pedl-user.forged"}),
        httpx.get(f"{master.url}{base}/", cookies={"pedl_tensorboard": "pedl-user.forged"}),
    ):
        assert anonymous.status_code == 401, anonymous.text
        assert "sign" in anonymous.json()["error"]["message"]
    started = signed_in.post("/api/v1/tensorboards", json={"experiment_ids": [finished, running]})
    assert started.status_code == 201 and started.json()["id"] == board_id  # the same one
    cookie = started.cookies["pedl_tensorboard"]
    page = httpx.get(
        f"{master.url}{base}/", cookies={"pedl_tensorboard": cookie}, timeout=scaled(30)
    )
    assert page.status_code == 200 and "<html" in page.text.lower()

    signed_in.close()
    listed = _cli(master, "list")
    assert board_id in listed and "RUNNING" in listed

    # Stop: the process ends (no orphan), the address answers 404.
    assert "stopped" in _cli(master, "stop", board_id)
    assert _tensorboard_processes(board_id) == []
    assert http.get(f"{master.url}{base}/").status_code == 404
    assert board_id not in _cli(master, "list")

    # The master's shutdown ends a TensorBoard it runs.
    other = _cli(master, "start", "--trial-ids", str(finished_trial)).split()[1]
    assert len(_tensorboard_processes(other)) == 1
    master.stop()
    assert _tensorboard_processes(other) == []
