"""The SDK under Determined's names (``determined.experimental.client``): metrics streams,
log filters, checkpoint selection, experiment editing, listing filters, state enums."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest
import yaml

from pedl.client import (
    Client,
    ExperimentSortBy,
    ExperimentState,
    LogLevel,
    NotFoundError,
    OrderBy,
    PEDLError,
    TrainingMetrics,
    ValidationMetrics,
)
from tests.cli.test_cli_det import LOG_LINES, Filled, fill
from tests.client.helpers import CONFIG_YAML, LiveMaster


@pytest.fixture
def filled(master: LiveMaster, client: Client, tmp_path: Path) -> Filled:
    return fill(master, client, tmp_path)


def test_metrics_streams_page_through_the_api(client: Client, filled: Filled) -> None:
    trial = client.get_trial(filled.trial_id)
    validations = list(trial.iter_metrics("validation"))
    assert [(m.steps_completed, m.metrics) for m in validations] == [
        (5, {"val_loss": 0.4}),
        (10, {"val_loss": 0.3}),
    ]
    assert all(isinstance(m, ValidationMetrics) and m.group == "validation" for m in validations)
    assert all(m.trial_id == filled.trial_id and m.trial_run_id == 0 for m in validations)
    training = list(client.stream_trials_training_metrics([filled.trial_id]))
    assert [type(m) for m in training] == [TrainingMetrics] and training[0].metrics == {"loss": 0.5}
    both = client.iter_trials_metrics([filled.trial_id, filled.trial_id], "validation")
    assert not isinstance(both, list)  # a generator
    assert len(list(both)) == 4
    assert len(list(client.stream_trials_validation_metrics([filled.trial_id]))) == 2
    from pedl.client._trial import iter_metrics_of

    paged = list(iter_metrics_of(client.session, filled.trial_id, "validation", page_size=1))
    assert [m.steps_completed for m in paged] == [5, 10]
    assert [m.metrics for m in trial.stream_training_metrics()] == [{"loss": 0.5}]
    assert len(list(trial.stream_validation_metrics())) == 2
    with pytest.raises(ValueError, match="group"):
        list(trial.iter_metrics("bogus"))


def test_iter_logs_filters(client: Client, filled: Filled) -> None:
    trial = client.get_trial(filled.trial_id)
    assert list(trial.iter_logs()) == [message for message, _, _ in LOG_LINES]
    assert list(trial.iter_logs(head=1)) == ["starting"]
    assert list(trial.iter_logs(tail=1)) == ["plain stdout"]
    assert list(trial.iter_logs(min_level=LogLevel.ERROR)) == ["it broke"]
    assert list(trial.iter_logs(search_text="careful")) == ["careful now"]
    records = list(trial.iter_log_lines(min_level="warning"))
    assert [(line.message, line.level) for line in records] == [
        ("careful now", "WARNING"),
        ("it broke", "ERROR"),
    ]
    # epoch seconds as Determined takes them: 2026-11-26T10:00:02Z
    assert "starting" not in list(trial.iter_logs(timestamp_after=1795687201))
    with pytest.raises(ValueError):
        list(trial.iter_logs(True, head=1))


def test_select_checkpoint(client: Client, filled: Filled) -> None:
    trial = client.get_trial(filled.trial_id)
    latest = trial.select_checkpoint(latest=True)
    assert latest is not None and latest.uuid == filled.uuids[1]
    by_uuid = trial.select_checkpoint(uuid=filled.uuids[0])
    assert by_uuid is not None and by_uuid.uuid == filled.uuids[0]
    with pytest.raises(ValueError):
        trial.select_checkpoint(latest=True, best=True)
    with pytest.raises(ValueError):
        trial.select_checkpoint()


def test_edit_and_delete_an_experiment(client: Client, filled: Filled, tmp_path: Path) -> None:
    exp = client.get_experiment(filled.experiment_id)
    exp.set_name("sdk-named")
    exp.set_description("described")
    exp.add_label("a")
    exp.add_label("b")
    exp.add_label("a")
    exp.remove_label("a")
    exp.set_labels(["b"])
    again = client.get_experiment(exp.id)
    assert (again.name, again.description, again.labels) == ("sdk-named", "described", ["b"])
    code = exp.extract_code(tmp_path / "code")
    assert (Path(code) / "model_def.py").is_file()
    with pytest.raises(PEDLError, match="already exists"):
        exp.extract_code(tmp_path / "code")
    assert exp.await_first_trial().id == filled.trial_id
    state = exp.wait(interval=0.01)
    assert state is ExperimentState.COMPLETED and state == "COMPLETED"
    exp.delete()
    assert not (filled.storage / filled.uuids[0]).exists()
    with pytest.raises(PEDLError):
        client.get_experiment(exp.id)


def test_list_experiments_filters(master: LiveMaster, client: Client, tmp_path: Path) -> None:
    first = fill(master, client, tmp_path / "one")
    second = fill(master, client, tmp_path / "two")
    client.get_experiment(first.experiment_id).set_name("zz-first-det")
    client.get_experiment(second.experiment_id).add_label("det-second")
    ids = {first.experiment_id, second.experiment_id}

    def listed(**kwargs: object) -> list[int]:
        return [e.id for e in client.list_experiments(**kwargs) if e.id in ids]  # type: ignore[arg-type]

    assert listed() == [second.experiment_id, first.experiment_id]
    assert listed(sort_by=ExperimentSortBy.ID) == [first.experiment_id, second.experiment_id]
    assert listed(sort_by="ID", order_by=OrderBy.DESC) == [
        second.experiment_id,
        first.experiment_id,
    ]
    assert listed(labels=["det-second"]) == [second.experiment_id]
    assert listed(name="FIRST-det") == [first.experiment_id]
    assert listed(users=["admin"]) == [second.experiment_id, first.experiment_id]
    assert listed(users=["nobody-here"]) == []
    assert listed(experiment_ids=[first.experiment_id]) == [first.experiment_id]
    assert listed(states=[ExperimentState.ACTIVE]) == []


def test_determined_names(client: Client) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        from determined.experimental import client as det_client
    for name in (
        "stream_trials_training_metrics",
        "stream_trials_validation_metrics",
        "iter_trials_metrics",
        "ExperimentState",
        "TrialState",
        "CheckpointState",
        "ExperimentSortBy",
        "OrderBy",
        "LogLevel",
    ):
        assert hasattr(det_client, name), name
    assert det_client.ExperimentState.COMPLETED == "COMPLETED"


def test_archive_and_templates_from_the_sdk(
    client: Client, filled: Filled, tmp_path: Path, model_dir: Path
) -> None:
    exp = client.get_experiment(filled.experiment_id)
    exp.archive()
    assert exp.archived and client.get_experiment(exp.id).archived
    assert exp.id not in [e.id for e in client.list_experiments()]
    assert exp.id in [e.id for e in client.list_experiments(archived=None)]
    exp.unarchive()
    assert not exp.archived and exp.id in [e.id for e in client.list_experiments()]

    name = "sdk-template"
    stored = client.set_template(name, "labels: [from-template]\ndescription: templated\n")
    assert stored == {"labels": ["from-template"], "description": "templated"}
    assert client.list_templates()[name] == stored
    created = client.create_experiment(
        {**yaml.safe_load(CONFIG_YAML.format(storage=filled.storage)), "labels": ["mine"]},
        model_dir,
        template=name,
        activate=False,
    )
    assert created.labels == ["mine"] and created.description == "templated"
    client.remove_template(name)
    with pytest.raises(NotFoundError):
        client.get_template(name)
