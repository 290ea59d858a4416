"""``det``'s remaining verbs on a real master (API only): ``experiment set max-slots /
priority / weight / gc-policy``, ``experiment continue``'s refusals and its records (a
single-trial experiment, a grid or random search),
``master logs``, and the trial log filters applied by the master."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import httpx
import pytest
from click.testing import CliRunner

from pedl.cli import cli
from pedl.client import Client, PEDLError, Session, TokenStore
from pedl.db import experiments as experiments_repo
from pedl.db import logs as logs_repo
from pedl.db import searcher as searcher_repo
from pedl.db import trials as trials_repo
from pedl.master._master_log import MasterLog
from pedl.vocabulary import CheckpointState, ExperimentState, TrialOutcome, TrialState
from tests.cli.test_cli_det import Filled, fill, run
from tests.client.helpers import LiveMaster, write_model_dir
from tests.waits import scaled


@pytest.fixture
def filled(master: LiveMaster, client: Client, tmp_path: Path) -> Filled:
    return fill(master, client, tmp_path)


def test_set_scheduling_settings_change_the_stored_config(
    master: LiveMaster, client: Client, filled: Filled
) -> None:
    exp = str(filled.experiment_id)
    result = run(master, "experiment", "set", "max-slots", exp, "3")
    assert result.exit_code == 0 and "Set `max_slots` of experiment" in result.output
    assert run(master, "e", "set", "priority", exp, "7").exit_code == 0
    assert run(master, "e", "set", "weight", exp, "2.5").exit_code == 0
    resources = client.get_experiment(filled.experiment_id).config["resources"]
    assert (resources["max_slots"], resources["priority"], resources["weight"]) == (3, 7, 2.5)
    assert run(master, "e", "set", "max-slots", exp, "none").exit_code == 0
    assert client.get_experiment(filled.experiment_id).config["resources"]["max_slots"] is None
    for args, field in (
        (["max-slots", exp, "0"], "max_slots"),
        (["priority", exp, "100"], "priority"),
        (["priority", exp, "0"], "priority"),
        (["weight", exp, "0"], "weight"),
        (["weight", "--", exp, "-1"], "weight"),
    ):
        refused = run(master, "experiment", "set", *args)
        assert refused.exit_code == 1 and field in refused.output, (args, refused.output)
    assert run(master, "e", "set", "max-slots", exp, "two").exit_code == 2


def test_settings_api_limits(
    master: LiveMaster, filled: Filled, user_headers: dict[str, str]
) -> None:
    url = f"{master.url}/api/v1/experiments/{filled.experiment_id}"
    for body, field in (
        ({"resources": {"priority": None}}, "resources.priority"),
        ({"resources": {"weight": 1e7}}, "weight"),
        ({"resources": {"max_slots": 100_000}}, "max_slots"),
        ({"resources": {"bogus": 1}}, "bogus"),
        ({"checkpoint_storage": {"save_trial_best": -1}}, "save_trial_best"),
        ({"checkpoint_storage": {"save_trial_latest": 10**7}}, "save_trial_latest"),
    ):
        answer = httpx.patch(url, json=body, headers=user_headers, timeout=scaled(30))
        assert answer.status_code == 422 and field in answer.text, (body, answer.text)


def test_gc_policy_previews_asks_then_deletes(
    master: LiveMaster, client: Client, filled: Filled
) -> None:
    exp = str(filled.experiment_id)
    args = ["experiment", "set", "gc-policy", exp, "--save-experiment-best", "0"]
    args += ["--save-trial-best", "0", "--save-trial-latest", "1"]
    older, newer = (filled.storage / uuid for uuid in filled.uuids)
    declined = CliRunner().invoke(cli, ["--master", master.url, *args], input="n\n")
    assert declined.exit_code == 1, declined.output
    assert "delete 1 checkpoints" in declined.output and filled.uuids[0] in declined.output
    assert older.exists() and newer.exists()
    kept = client.get_experiment(filled.experiment_id).config["checkpoint_storage"]
    assert kept["save_trial_latest"] == 1 and kept["save_trial_best"] == 1  # unchanged
    applied = CliRunner().invoke(cli, ["--master", master.url, *args], input="y\n")
    assert applied.exit_code == 0 and "Set GC policy" in applied.output, applied.output
    assert not older.exists() and newer.exists()
    states = {
        c.uuid: c.state for c in client.get_experiment(filled.experiment_id).list_checkpoints()
    }
    assert states[filled.uuids[0]] == CheckpointState.DELETED
    assert states[filled.uuids[1]] == CheckpointState.COMPLETED
    storage = client.get_experiment(filled.experiment_id).config["checkpoint_storage"]
    assert (storage["save_trial_best"], storage["save_experiment_best"]) == (0, 0)
    negative = run(master, *args[:-1], "-1", "--yes")
    assert negative.exit_code == 1 and "save_trial_latest" in negative.output


def test_continue_refuses_what_det_refuses(
    master: LiveMaster, client: Client, filled: Filled, tmp_path: Path
) -> None:
    exp = str(filled.experiment_id)
    for args, expected in (
        (["--config", "hyperparameters.lr=0.5"], "hyperparameters cannot change"),
        (["--config", "searcher.name=random"], "single searcher type"),
        (["--config", "project=other"], "'project' in override config"),
        (["--config", "searcher.max_length.batches=-5"], "searcher.max_length"),
    ):
        refused = run(master, "experiment", "continue", exp, *args)
        assert refused.exit_code == 1 and expected in refused.output, (args, refused.output)
    other = tmp_path / "live"
    other.mkdir()
    live = client.create_experiment(
        (filled.storage.parent / "config.yaml"), filled.storage.parent / "model", activate=False
    )
    running = run(master, "e", "continue", str(live.id))
    assert running.exit_code == 1 and "only an ended experiment" in running.output
    bad_yaml = tmp_path / "override.yaml"
    bad_yaml.write_text("- just\n- a list\n")
    listed = run(master, "e", "continue", exp, "--config-file", str(bad_yaml))
    assert listed.exit_code == 2 and "mapping" in listed.output


def test_continue_makes_the_experiment_and_its_trial_live_again(
    master: LiveMaster, client: Client, filled: Filled, tmp_path: Path
) -> None:
    with master.database.session(write=True) as session:  # e.g. it ran out of restarts
        trials_repo.get_trial(session, filled.trial_id).restarts = 2
    override = tmp_path / "longer.yaml"
    override.write_text("searcher:\n  max_length: {batches: 400}\nmax_restarts: 2\n")
    result = run(
        master, "experiment", "continue", str(filled.experiment_id), "--config-file", str(override)
    )
    assert result.exit_code == 0 and "Continued experiment" in result.output, result.output
    exp = client.get_experiment(filled.experiment_id)
    assert exp.state == ExperimentState.ACTIVE and exp.ended_at is None
    assert exp.config["searcher"]["max_length"] == {"batches": 400}
    assert exp.config["max_restarts"] == 2
    trial = client.get_trial(filled.trial_id)
    assert (trial.state, trial.restarts, trial.ended_at) == (TrialState.ACTIVE, 0, None)
    with master.database.session() as session:
        events = [row.event for row in searcher_repo.list_searcher_events(session, exp.id)]
        assert (
            trials_repo.get_trial(session, filled.trial_id).latest_checkpoint_uuid
            == (filled.uuids[1])
        )
    assert events == []  # the searcher starts afresh when the master adopts it
    again = run(master, "experiment", "continue", str(filled.experiment_id))
    assert again.exit_code == 1 and "only an ended experiment" in again.output


SEARCH_YAML = """\
name: continued-search
entrypoint: model_def:MyTrial
hyperparameters:
  lr: {{type: categorical, vals: [0.1, 0.2, 0.3]}}
searcher: {searcher}
checkpoint_storage: {{type: shared_fs, host_path: {storage}}}
"""


def _search(
    master: LiveMaster,
    client: Client,
    root: Path,
    searcher: str,
    ended: ExperimentState,
    trials: list[tuple[TrialState, TrialOutcome]],
) -> tuple[int, list[int]]:
    """An ended experiment of ``searcher`` with ``trials`` (request ids 1, 2, ...) in those
    states, each having spent 2 restarts, as a search leaves them."""
    (root / "checkpoints").mkdir(parents=True)
    config = root / "search.yaml"
    config.write_text(SEARCH_YAML.format(searcher=searcher, storage=root / "checkpoints"))
    exp = client.create_experiment(config, write_model_dir(root), activate=False)
    ids = []
    with master.database.session(write=True) as session:
        for request_id, (state, outcome) in enumerate(trials, start=1):
            trial, _ = trials_repo.create_trial(
                session,
                experiment_id=exp.id,
                hparams={"lr": 0.1 * request_id},
                seed=request_id,
                request_id=str(request_id),
            )
            trial.state, trial.outcome, trial.restarts = state, outcome, 2
            ids.append(trial.id)
        experiments_repo.get_experiment(session, exp.id).state = ended
    return exp.id, ids


GRID = "{name: grid, metric: val_loss, max_length: {batches: 100}, max_concurrent_trials: 1}"


def test_continue_a_grid_search_keeps_completed_trials_and_revives_the_others(
    master: LiveMaster, client: Client, tmp_path: Path
) -> None:
    exp_id, (done, failed) = _search(
        master,
        client,
        tmp_path,
        GRID,
        ExperimentState.CANCELED,
        [
            (TrialState.COMPLETED, TrialOutcome.COMPLETED),
            (TrialState.ERROR, TrialOutcome.ERRORED),
        ],
    )
    changed = run(master, "experiment", "continue", str(exp_id), "--config", "max_restarts=3")
    assert changed.exit_code == 1, changed.output
    assert "override config is provided and experiment is not single searcher" in changed.output
    result = run(master, "e", "continue", str(exp_id))
    assert result.exit_code == 0 and "Continued experiment" in result.output, result.output
    exp = client.get_experiment(exp_id)
    assert exp.state == ExperimentState.ACTIVE and exp.ended_at is None
    kept, revived = client.get_trial(done), client.get_trial(failed)
    assert (kept.state, kept.outcome, kept.restarts) == (
        TrialState.COMPLETED,
        TrialOutcome.COMPLETED,
        0,
    )
    assert (revived.state, revived.outcome, revived.restarts, revived.ended_at) == (
        TrialState.ACTIVE,
        None,
        0,
        None,
    )
    with master.database.session() as session:
        assert searcher_repo.list_searcher_events(session, exp_id) == []


def test_continue_refuses_a_completed_search_and_other_searchers(
    master: LiveMaster, client: Client, tmp_path: Path, user_headers: dict[str, str]
) -> None:
    completed = (TrialState.COMPLETED, TrialOutcome.COMPLETED)
    done_id, _ = _search(
        master, client, tmp_path / "done", GRID, ExperimentState.COMPLETED, [completed] * 3
    )
    url = f"{master.url}/api/v1/experiments/{done_id}/continue"
    answer = httpx.post(url, json={}, headers=user_headers, timeout=scaled(30))
    assert answer.status_code == 409, answer.text
    assert "experiment has been completed, cannot continue this experiment" in answer.text
    answer = httpx.post(
        url, json={"config": "max_restarts: 1"}, headers=user_headers, timeout=scaled(30)
    )
    assert answer.status_code == 422 and "not single searcher" in answer.text, answer.text
    # COMPLETED with a trial that errored: it continues (that trial trains again).
    random = "{name: random, metric: val_loss, max_length: {batches: 100}, max_trials: 2}"
    errored = (TrialState.ERROR, TrialOutcome.ERRORED)
    partly_id, (_, failed) = _search(
        master, client, tmp_path / "partly", random, ExperimentState.COMPLETED, [completed, errored]
    )
    assert run(master, "e", "continue", str(partly_id)).exit_code == 0
    assert client.get_trial(failed).state == TrialState.ACTIVE
    asha = "{name: adaptive_asha, metric: val_loss, max_length: {batches: 100}, max_trials: 4}"
    asha_id, _ = _search(
        master, client, tmp_path / "asha", asha, ExperimentState.CANCELED, [errored]
    )
    answer = httpx.post(
        f"{master.url}/api/v1/experiments/{asha_id}/continue",
        json={},
        headers=user_headers,
        timeout=scaled(30),
    )
    assert answer.status_code == 422, answer.text
    assert answer.json()["error"]["field"] == "searcher.name" and "'adaptive_asha'" in answer.text
    refused = run(master, "e", "continue", str(asha_id))
    assert refused.exit_code == 1 and "unsupported searcher type" in refused.output


def test_master_logs(master: LiveMaster, client: Client, tmp_path: Path) -> None:
    logging.getLogger("pedl.master").warning("a marker for det master logs %s", tmp_path.name)
    result = run(master, "master", "logs", "--tail", "50")
    assert result.exit_code == 0, result.output
    line = next(line for line in result.output.splitlines() if tmp_path.name in line)
    assert "[WARNING]: a marker for det master logs" in line
    assert run(master, "master", "logs", "--tail", "10001").exit_code == 2
    username = f"logs{tmp_path.name[-8:]}".replace("_", "").lower()
    client.create_user(username, "viewer-password-123")
    with Client(master.url) as admin:
        assert admin.session.get("/master/logs", params={"tail": 1})
    viewer = Session(master.url, tokens=TokenStore(tmp_path / "tokens"))
    viewer.login(username, "viewer-password-123")
    with pytest.raises(PEDLError) as refused:
        viewer.get("/master/logs")
    assert refused.value.status_code == 403
    viewer.close()


def test_master_log_ring_buffer_is_bounded() -> None:
    log = MasterLog(capacity=3, max_message=10)
    logger = logging.getLogger("tests.master_log_ring")
    logger.propagate = False
    logger.addHandler(log)
    try:
        for number in range(5):
            logger.warning("line %d", number)
        logger.warning("x" * 50)
    finally:
        logger.removeHandler(log)
    lines = log.lines()
    assert [line.seq for line in lines] == [4, 5, 6]
    assert lines[-1].message == "x" * 10 + " [... 40 more characters]"
    assert [line.message for line in log.lines(after_seq=4, tail=1)] == [lines[-1].message]
    assert log.lines(tail=0) == []
    with pytest.raises(ValueError):
        MasterLog(capacity=0)


def test_trial_log_filters_run_on_the_master(
    master: LiveMaster, filled: Filled, user_headers: dict[str, str]
) -> None:
    url = f"{master.url}/api/v1/trials/{filled.trial_id}/logs"

    def get(**params: Any) -> httpx.Response:
        return httpx.get(url, params=params, headers=user_headers, timeout=scaled(30))

    assert [line["message"] for line in get(level="warning").json()] == ["careful now", "it broke"]
    assert [line["message"] for line in get(level="INFO", tail=2).json()] == [
        "it broke",
        "plain stdout",
    ]
    assert [line["message"] for line in get(search_text="broke").json()] == ["it broke"]
    assert get(search_text="BROKE").json() == []  # case-sensitive, as before, on SQLite too
    assert [line["message"] for line in get(head=1).json()] == ["starting"]
    stamped = get(timestamp_after="2026-11-26T10:00:02Z").json()
    assert [line["message"] for line in stamped] == ["it broke", "plain stdout"]
    assert get(rank_ids=[1]).json() == []
    for params, field in (
        ({"level": "loud"}, "level"),
        ({"head": 1, "tail": 1}, "tail"),
        ({"tail": 10_001}, "tail"),
        ({"rank_ids": list(range(1001))}, "rank_ids"),
        ({"rank_ids": [-1]}, "rank_ids"),
        ({"search_text": "x" * 1001}, "search_text"),
        ({"timestamp_before": "yesterday"}, "timestamp_before"),
    ):
        answer = get(**params)
        assert answer.status_code == 422 and field in answer.text, (params, answer.text)


def test_trial_logs_rank_ids_repeat(master: LiveMaster, filled: Filled) -> None:
    with master.database.session(write=True) as session:
        logs_repo.append_logs(
            session,
            filled.trial_id,
            [logs_repo.LogLine(seq=200 + r, message=f"rank {r} here", rank=r) for r in (0, 1, 2)],
        )
    trial = str(filled.trial_id)
    both = run(master, "trial", "logs", trial, "--rank-id", "2", "--rank-id", "0")
    assert both.exit_code == 0 and both.output == "rank 0 here\nrank 2 here\n", both.output
    mixed = run(master, "t", "logs", trial, "--rank", "1", "--rank-id", "2", "--tail", "1")
    assert mixed.exit_code == 0 and mixed.output == "rank 2 here\n", mixed.output
