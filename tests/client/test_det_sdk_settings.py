"""The SDK's forms of ``det experiment set max-slots / priority / weight / gc-policy`` and
``det experiment continue``, and its trial log filters sent to the master."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from pedl.client import Client, ExperimentState, PEDLError, Session
from pedl.vocabulary import CheckpointState, TrialState
from tests.cli.test_cli_det import LOG_LINES, Filled, fill
from tests.client.helpers import (
    LiveMaster,
    report,
    store_checkpoint,
    write_config,
    write_model_dir,
)


@pytest.fixture
def filled(master: LiveMaster, client: Client, tmp_path: Path) -> Filled:
    return fill(master, client, tmp_path)


def test_scheduling_setters(client: Client, filled: Filled) -> None:
    exp = client.get_experiment(filled.experiment_id)
    exp.set_max_slots(4)
    exp.set_priority(10)
    exp.set_weight(0.5)
    resources = exp.config["resources"]  # the answer's record, not a reload
    assert (resources["max_slots"], resources["priority"], resources["weight"]) == (4, 10, 0.5)
    exp.set_max_slots(None)
    assert client.get_experiment(exp.id).config["resources"]["max_slots"] is None
    with pytest.raises(PEDLError) as refused:
        exp.set_priority(0)
    assert refused.value.status_code == 422 and "priority" in str(refused.value)


def test_gc_policy_preview_then_set(client: Client, filled: Filled) -> None:
    exp = client.get_experiment(filled.experiment_id)
    policy = {"save_experiment_best": 0, "save_trial_best": 0, "save_trial_latest": 1}
    # The latest (batch 10) stays: only the batch-5 checkpoint goes.
    assert [c.uuid for c in exp.preview_gc(**policy)] == [filled.uuids[0]]
    everything = {"save_experiment_best": 0, "save_trial_best": 0, "save_trial_latest": 0}
    assert {c.uuid for c in exp.preview_gc(**everything)} == set(filled.uuids)
    assert all(c.state == CheckpointState.COMPLETED for c in exp.list_checkpoints())  # a preview
    exp.set_gc_policy(**policy)
    states = {c.uuid: c.state for c in exp.list_checkpoints()}
    assert states == {
        filled.uuids[0]: CheckpointState.DELETED,
        filled.uuids[1]: CheckpointState.COMPLETED,
    }
    assert not (filled.storage / filled.uuids[0]).exists()
    with pytest.raises(PEDLError) as refused:
        exp.set_gc_policy(save_experiment_best=-1, save_trial_best=0, save_trial_latest=0)
    assert refused.value.status_code == 422


def test_continue_experiment(client: Client, filled: Filled) -> None:
    exp = client.get_experiment(filled.experiment_id)
    exp.continue_experiment({"searcher": {"max_length": {"batches": 300}}})
    assert exp.state == ExperimentState.ACTIVE
    assert exp.config["searcher"]["max_length"] == {"batches": 300}
    with pytest.raises(PEDLError) as refused:
        exp.continue_experiment()
    assert refused.value.status_code == 409


class RecordingTransport(httpx.HTTPTransport):
    """The real transport, remembering every request it sent."""

    def __init__(self) -> None:
        super().__init__()
        self.requests: list[httpx.Request] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        return super().handle_request(request)


def test_log_filters_travel_as_query_parameters(master: LiveMaster, filled: Filled) -> None:
    """The SDK asks the master for the filtered lines: one request, only those lines."""
    transport = RecordingTransport()
    with Client(session=Session(master.url, transport=transport)) as sdk:
        trial = sdk.get_trial(filled.trial_id)
        lines = list(
            trial.iter_log_lines(
                min_level="warning", search_text="broke", timestamp_after=1795687201, tail=5
            )
        )
        assert [line.message for line in lines] == ["it broke"]
        (request,) = [r for r in transport.requests if r.url.path.endswith("/logs")]
        params = request.url.params
        assert params["level"] == "WARNING" and params["search_text"] == "broke"
        assert params["tail"] == "5" and params["timestamp_after"].startswith("2026-11-26T")
        assert list(trial.iter_logs(rank_ids=[0, 1])) == []
        everything = [message for message, _, _ in LOG_LINES]
        assert list(trial.iter_logs(head=20_000)) == everything  # paged, cut here
        assert list(trial.iter_logs(tail=20_000)) == everything


MULTI_OBJECTIVE_CONFIG = """\
name: sdk-pareto
entrypoint: model_def:MyTrial
hyperparameters:
  lr: {{type: const, val: 0.1}}
searcher:
  name: random
  max_trials: 2
  metrics:
    - {{name: val_loss, smaller_is_better: true}}
    - {{name: val_params, smaller_is_better: false}}
  max_length: {{batches: 100}}
checkpoint_storage:
  type: shared_fs
  host_path: {storage}
"""


def test_gc_policy_of_a_multi_objective_experiment_keeps_its_front(
    master: LiveMaster, client: Client, tmp_path: Path
) -> None:
    """``save_experiment_best`` ranks a multi-objective search's checkpoints by Pareto order,
    as the experiment's own retention does: a preview and a change of the policy keep every
    checkpoint of the front, not only the best of the first objective."""
    storage = tmp_path / "checkpoints"
    storage.mkdir()
    config = write_config(tmp_path, storage, MULTI_OBJECTIVE_CONFIG.format(storage=storage))
    exp = client.create_experiment(config, write_model_dir(tmp_path))
    uuids = {}
    # Neither trial beats the other in both objectives: both are on the front.
    for name, val_loss, val_params in (("a", 0.5, 10.0), ("b", 0.3, 5.0)):
        trial_id, token = master.create_trial(exp.id)
        validation = {"val_loss": val_loss, "val_params": val_params}
        with master.trial_api(token) as api:
            report(api, trial_id, "validation", 10, **validation)
            uuids[name] = store_checkpoint(
                api, trial_id, storage, 10, {"w.bin": b"w"}, validation_metrics=validation
            )
        master.set_trial_state(trial_id, TrialState.COMPLETED)
    master.set_experiment_state(exp.id, ExperimentState.COMPLETED)

    front = {"save_experiment_best": 1, "save_trial_best": 0, "save_trial_latest": 0}
    assert exp.preview_gc(**front) == []
    exp.set_gc_policy(**front)
    states = {c.uuid: c.state for c in exp.list_checkpoints()}
    assert states == dict.fromkeys(uuids.values(), CheckpointState.COMPLETED)
    nothing = {"save_experiment_best": 0, "save_trial_best": 0, "save_trial_latest": 0}
    assert {c.uuid for c in exp.preview_gc(**nothing)} == set(uuids.values())
