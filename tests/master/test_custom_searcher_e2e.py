"""End to end: a custom searcher written with Determined's names, in the model definition,
drives experiments on a real master (and in local mode) from a process of its own.

The searcher (``custom_searcher_model/search.py``) records its process id in every trial's
hyperparameters (``searcher_pid``): the tests compare it with the master's (or this test
process's) id, and check that the searcher process is gone once the experiment ended.
"""

from __future__ import annotations

import os
import re
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from pedl.local import LocalExperiment
from pedl.vocabulary import ExperimentState
from tests.waits import scaled

from .e2e import MasterProcess, create_experiment, metric_rows, trials, wait_for, wait_trial

pytestmark = pytest.mark.slow

MODEL_DIR = Path(__file__).parent / "custom_searcher_model"

CONFIG = """
name: {name}
hyperparameters: {{global_batch_size: 16, lr: 0.01}}
searcher:
  name: custom
  metric: val_accuracy
  smaller_is_better: false
  unit: batches
  {search_method}
scheduling_unit: 10
min_validation_period: {{batches: 10}}
min_checkpoint_period: {{batches: 10}}
max_restarts: 0
reproducibility: {{experiment_seed: 3}}
environment:
  environment_variables: {env}
"""


def config(name: str, search_method: str | None = None, env: list[str] | None = None) -> str:
    line = f'search_method: "{search_method}"' if search_method else ""
    return CONFIG.format(name=name, search_method=line, env=env or [])


def gone(pid: int, timeout: float = 20.0) -> bool:
    """Whether process ``pid`` ends (or is a zombie) within ``timeout`` seconds."""
    deadline = time.monotonic() + scaled(timeout)
    while time.monotonic() < deadline:
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except FileNotFoundError:
            return True
        if stat.rsplit(")", 1)[1].split()[0] == "Z":
            return True
        time.sleep(0.1)
    return False


def searcher_pids(found: list[dict[str, Any]]) -> list[int]:
    return [int(t["hparams"]["searcher_pid"]) for t in found]


@pytest.fixture(scope="module")
def master(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MasterProcess]:
    process = MasterProcess(tmp_path_factory.mktemp("custom-master")).start()
    try:
        yield process
    finally:
        process.stop()


@pytest.fixture(scope="module")
def undisturbed(master: MasterProcess) -> list[dict[str, Any]]:
    """The trials of one undisturbed custom search on the shared master."""
    experiment_id = create_experiment(
        master.http, config("custom", "search:RandomSearchMethod"), MODEL_DIR
    )
    wait_for(master.http, experiment_id, {"COMPLETED"}, timeout=300, master=master)
    return trials(master.http, experiment_id)


def test_a_custom_searcher_drives_an_experiment_from_its_own_process(
    master: MasterProcess, undisturbed: list[dict[str, Any]]
) -> None:
    assert master.proc is not None
    assert len(undisturbed) == 3
    assert [t["state"] for t in undisturbed] == ["COMPLETED"] * 3
    for trial in undisturbed:
        rows = metric_rows(master.http, trial["id"])
        assert [b for kind, b, _ in rows if kind == "validation"] == [10, 20]
    lrs = [t["hparams"]["lr"] for t in undisturbed]
    assert len(set(lrs)) == 3
    (pid,) = set(searcher_pids(undisturbed))
    assert pid not in (master.proc.pid, os.getpid())
    # The searcher process has a trial's environment: none of the master's settings.
    assert [t["hparams"]["searcher_saw"] for t in undisturbed] == [""] * 3
    assert f"custom searcher search.RandomSearchMethod runs in process {pid}" in master.log()
    assert gone(pid), "the searcher process outlived its experiment"


def test_a_custom_searchers_exception_ends_the_experiment_naming_it(
    master: MasterProcess,
) -> None:
    experiment_id = create_experiment(
        master.http, config("custom-failing", "search:FailingSearch"), MODEL_DIR
    )
    body = wait_for(master.http, experiment_id, {"ERROR"}, timeout=300, master=master)
    assert re.fullmatch(
        r"the searcher failed: CustomSearcherError: the custom searcher's "
        r"on_validation_completed raised ValueError: cannot use the metric 0\.\d{3} "
        r"\(search\.py:\d+, in on_validation_completed\)",
        body["error"],
    ), body["error"]
    found = trials(master.http, experiment_id)
    assert found and all(t["state"] in ("CANCELED", "COMPLETED") for t in found)
    (pid,) = set(searcher_pids(found))
    assert gone(pid)


def test_after_a_master_restart_the_search_is_replayed_into_a_new_process(
    undisturbed: list[dict[str, Any]], tmp_path: Path
) -> None:
    home = tmp_path / "restarting-master"
    first = MasterProcess(home).start()
    experiment_id = create_experiment(
        first.http,
        config("custom-restart", "search:RandomSearchMethod", ["PEDL_TEST_SLEEP=0.5"]),
        MODEL_DIR,
    )
    deadline = time.monotonic() + scaled(120)
    while len(found := trials(first.http, experiment_id)) < 2:
        assert time.monotonic() < deadline, found
        time.sleep(0.2)
    # Killed after a validation, 10 slow batches before a trial can close (and a third start).
    wait_trial(first.http, found[0]["id"], lambda t: t["total_batches"] >= 10)
    before = trials(first.http, experiment_id)
    first.sigkill()
    first.http.close()
    (old_pid,) = set(searcher_pids(before))
    assert gone(old_pid), "the searcher process outlived its master"

    second = MasterProcess(home)
    second.port, second.url = first.port, first.url
    second.http = httpx.Client(base_url=first.url + "/api/v1", timeout=scaled(30))
    second.start()
    try:
        wait_for(second.http, experiment_id, {"COMPLETED"}, timeout=300, master=second)
        done = trials(second.http, experiment_id)
        assert second.proc is not None
        started = re.findall(r"custom searcher \S+ runs in process (\d+)", second.log())
        new_pid = int(started[-1])
        assert new_pid not in (old_pid, second.proc.pid)
        # Trials made after the restart come from the searcher replayed into a new process,
        # and it made the same trials as the undisturbed run (it is seeded).
        made = len(before)
        assert searcher_pids(done) == [old_pid] * made + [new_pid] * (3 - made)
        assert [t["hparams"]["lr"] for t in done] == [t["hparams"]["lr"] for t in undisturbed]
        assert [t["state"] for t in done] == ["COMPLETED"] * 3
    finally:
        second.stop()
    assert gone(new_pid), "the searcher process outlived its master"


def test_local_mode_runs_the_default_custom_searcher_in_its_own_process(tmp_path: Path) -> None:
    """No ``search_method``: the one SearchMethod subclass in the model definition's module."""
    config_path = tmp_path / "config.yaml"
    config_path.write_text(textwrap.dedent(config("custom-local")))
    experiment = LocalExperiment.create(config_path, MODEL_DIR, tmp_path / "runs")
    try:
        assert experiment.search_method is not None
        pid = experiment.search_method.pid
        assert experiment.search_method.searcher_class == "model_def.search.RandomSearchMethod"
        summary = experiment.run()
    finally:
        experiment.close()
    assert summary.state == ExperimentState.COMPLETED, summary.error
    assert len(summary.trials) == 3
    assert {t.hparams["searcher_pid"] for t in summary.trials} == {pid}
    assert pid != os.getpid()
    assert gone(pid)
