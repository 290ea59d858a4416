"""On a real master with real trial processes: every place a model definition can fail ends
its trial as the rules say, and ``describe``, ``wait`` and ``create --follow`` say why;
``pedl.InvalidHP`` from several places in grid and random searches."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from pedl import model_def
from pedl.cli import cli
from pedl.vocabulary import TrialError
from tests.failure_cases import (
    CASES,
    CONFIG,
    INVALID_HP_PLACES,
    INVALID_UNITS,
    MAX_RESTARTS,
    Case,
    write_tensorflow_stubs,
)

from .e2e import MODEL_DIR, MasterProcess, create_experiment, experiment, logs, trials, wait_for

pytestmark = pytest.mark.slow

TF_MISSING = Case(
    "tensorflow_missing",
    next(c for c in CASES if c.name == "build_model").source,
    "ModuleNotFoundError",
    "pip install 'pedl[tf]'",
    "import keras",
    True,
)


def _config(name: str, *, searcher: str = "grid", units: str = "1", extra: str = "") -> str:
    return CONFIG.format(
        name=name, units=units, searcher=searcher, extra=extra, max_restarts=MAX_RESTARTS
    )


@pytest.fixture(scope="module")
def master(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MasterProcess]:
    process = MasterProcess(tmp_path_factory.mktemp("failures-master")).start()
    try:
        yield process
    finally:
        process.stop()


@pytest.fixture(scope="module")
def failed(
    master: MasterProcess, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, tuple[Case, int]]:
    """Every failure case submitted at once; name -> (case, experiment id), all ended."""
    root = tmp_path_factory.mktemp("failure-models")
    stubs = write_tensorflow_stubs(root / "stubs")
    submitted = {}
    for case in [*CASES, TF_MISSING]:
        config = _config(case.name)
        if case is TF_MISSING:
            config += f"environment:\n  environment_variables: [PYTHONPATH={stubs}]\n"
        submitted[case.name] = (
            case,
            create_experiment(master.http, config, case.write(root / case.name)),
        )
    for _, experiment_id in submitted.values():
        wait_for(master.http, experiment_id, {"ERROR"}, timeout=300, master=master)
    return submitted


@pytest.mark.parametrize("name", [c.name for c in [*CASES, TF_MISSING]])
def test_the_trial_records_why_it_failed(
    name: str, master: MasterProcess, failed: dict[str, tuple[Case, int]]
) -> None:
    case, experiment_id = failed[name]
    (trial,) = trials(master.http, experiment_id)
    assert trial["state"] == "ERROR"
    assert trial["outcome"] == "ERRORED"
    error = trial["error"]
    assert error["type"] == case.error_type
    assert case.message in error["message"]
    assert error["location"] == case.location()
    assert error["before_progress"] == case.before_progress
    assert trial["restarts"] == case.attempts - 1
    # ended by the rule that a repeat of the error before the restart is not restarted
    assert error["recurred"] == (not case.before_progress and case.recurs)
    summary = TrialError.from_dict(error).summary()
    assert summary in (experiment(master.http, experiment_id)["error"] or "")
    # The trial's logs hold one traceback per attempt at most.
    text = logs(master.http, trial["id"])
    assert text.count("Traceback (most recent call last)") <= case.attempts, text


@pytest.mark.parametrize("command", ["describe", "wait"])
def test_describe_and_wait_say_why(
    command: str, master: MasterProcess, failed: dict[str, tuple[Case, int]]
) -> None:
    for case, experiment_id in failed.values():
        result = CliRunner().invoke(
            cli, ["--master", master.url, "experiment", command, str(experiment_id)]
        )
        assert result.exit_code == (1 if command == "wait" else 0), result.output
        (trial,) = trials(master.http, experiment_id)
        error = trial["error"]
        line = f"{error['type']}: {error['message']}"
        assert f"Experiment {experiment_id} failed: every trial failed (1 of 1)" in result.output
        assert f"trial {trial['id']} (ERROR, error" in result.output
        assert line in result.output and str(case.location() or "") in result.output
        said = "the same error at the same batch"
        assert (said in result.output) == error["recurred"], result.output
        assert result.output.count(error["message"]) == 1, result.output  # said once


def test_create_follow_says_why(master: MasterProcess, tmp_path: Path) -> None:
    case = next(c for c in CASES if c.name == "build_model")
    model = case.write(tmp_path / "model")
    config = tmp_path / "config.yaml"
    config.write_text(_config("follow"))
    result = CliRunner().invoke(
        cli,
        ["--master", master.url, "experiment", "create", str(config), str(model), "--follow"],
    )
    assert result.exit_code == 1, result.output
    assert "ended: ERROR" in result.output
    assert f"ValueError: boom in build_model ({case.location()})" in result.output
    assert "before training progressed, not restarted" in result.output
    assert result.output.count("boom in build_model") == 1, result.output  # said once


def test_a_trial_that_can_never_be_placed_is_refused_at_create(master: MasterProcess) -> None:
    too_big = master.http.post(
        "/experiments",
        json={
            "config": _config("big") + "resources: {slots_per_trial: 4}\n",
            "model_definition": base64.b64encode(model_def.package(MODEL_DIR)).decode(),
        },
    )
    assert too_big.status_code == 422, too_big.text
    assert "needs 4 slots, the cluster has 2" in too_big.json()["error"]["message"]


@pytest.mark.parametrize(
    ("place", "searcher"),
    [
        ("init", "grid"),
        ("build_model", "grid"),
        ("data_loader", "grid"),
        ("training", "grid"),
        ("init", "random"),
        ("training", "random"),
    ],
)
def test_invalid_hp(place: str, searcher: str, master: MasterProcess, tmp_path: Path) -> None:
    model = tmp_path / "model"
    model.mkdir()
    (model / "__init__.py").write_text(INVALID_HP_PLACES[place])
    extra = "max_trials: 3" if searcher == "random" else ""
    experiment_id = create_experiment(
        master.http,
        _config(f"invalid-{searcher}-{place}", searcher=searcher, units="1, 2, 3", extra=extra),
        model,
    )
    wait_for(master.http, experiment_id, {"COMPLETED"}, timeout=300, master=master)
    rows = trials(master.http, experiment_id)
    valid = [t for t in rows if t["outcome"] == "COMPLETED"]
    invalid = [t for t in rows if t["outcome"] == "INVALID_HP"]
    assert all(t["hparams"]["units"] == INVALID_UNITS and t["restarts"] == 0 for t in invalid)
    assert all(t["state"] == "COMPLETED" for t in rows)
    if searcher == "grid":
        assert sorted(t["hparams"]["units"] for t in valid) == [1, 2]
        assert len(invalid) == 1
    else:
        assert len(valid) == 3
        assert all(t["hparams"]["units"] != INVALID_UNITS for t in valid)
