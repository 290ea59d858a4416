"""End to end on a real master: KerasTuner's getting-started search (scikit-learn's digits),
one script for every tuner kind, submitted unchanged with a config naming no hyperparameters
(its searcher ``pedl.tuner:KerasTunerSearch``, or no searcher at all: the master fills in the
one the script implies): the trials' hyperparameters are points of the tuner's space, the
search completes, and the script's code after ``tuner.search`` run with ``python -m pedl.tuner
EXPERIMENT_ID`` gets the best trial's model with its checkpoint's weights."""

from __future__ import annotations

import base64
import json
import math
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest

from pedl import model_def
from pedl.searcher import missing_optuna_requirements
from tests.master.e2e import MasterProcess, create_experiment, experiment, trials, wait_for
from tests.waits import scaled

pytestmark = pytest.mark.slow

MODEL_DIR = Path(__file__).parent / "search_model"
EXAMPLE = Path(__file__).parents[2] / "examples" / "digits_kerastuner"

OBJECTIVES = {
    "random": ("val_accuracy", False),
    "grid": ("val_accuracy", False),
    "hyperband": ("val_loss", True),
    "bayesian": ("val_accuracy", False),
}


def config(kind: str, extra: str = "") -> str:
    """The experiment config a user writes for the script: its entrypoint and the searcher
    that reads the tuner (with the tuner's objective), no hyperparameters."""
    metric, smaller = OBJECTIVES[kind]
    length = "  max_length: {epochs: 2}\nrecords_per_epoch: 512\n" if kind == "hyperband" else ""
    return (
        f"name: kerastuner-{kind}\n"
        f"entrypoint: python3 search.py --tuner {kind}\n"
        "searcher:\n"
        "  name: custom\n"
        "  search_method: pedl.tuner:KerasTunerSearch\n"
        f"  metric: {metric}\n"
        f"  smaller_is_better: {str(smaller).lower()}\n"
        f"{length}"
        "max_restarts: 0\n"
        "reproducibility: {experiment_seed: 7}\n"
        f"{extra}"
    )


@pytest.fixture(scope="module")
def master(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MasterProcess]:
    env = {"PEDL_AUTH": "false", "PEDL_SEARCHER_START_TIMEOUT": str(scaled(600))}
    process = MasterProcess(tmp_path_factory.mktemp("tuner-master"), env=env)
    process.start()
    try:
        yield process
    finally:
        process.stop()


def run_search(master: MasterProcess, kind: str) -> tuple[int, list[dict[str, Any]]]:
    experiment_id = create_experiment(master.http, config(kind), MODEL_DIR)
    wait_for(master.http, experiment_id, {"COMPLETED"}, timeout=900, master=master)
    return experiment_id, trials(master.http, experiment_id)


def check_space(kind: str, found: list[dict[str, Any]]) -> None:
    """Every trial's hyperparameters are a point of the script's search space."""
    for trial in found:
        hparams = trial["hparams"]
        assert set(hparams) == {"units", "dropout", "rate", "lr"}, hparams
        assert hparams["units"] in (16, 32)
        assert hparams["dropout"] in (True, False)
        assert hparams["rate"] == 0.25
        if kind == "grid":
            assert hparams["lr"] == 0.01
        else:
            assert 1e-3 <= hparams["lr"] <= 3e-2


def results(master: MasterProcess, experiment_id: int, tmp_path: Path) -> tuple[str, Path]:
    """Run the script's code after tuner.search on the experiment (as a user would, from a
    copy of the model directory): its output and directory."""
    workdir = tmp_path / "search"
    shutil.copytree(MODEL_DIR, workdir)
    env = {**os.environ, "PEDL_MASTER": master.url, "TF_CPP_MIN_LOG_LEVEL": "2"}
    done = subprocess.run(
        [sys.executable, "-m", "pedl.tuner", str(experiment_id)],
        cwd=workdir,
        env=env,
        capture_output=True,
        text=True,
        timeout=scaled(300),
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout, workdir


def checkpoint_weights(master: MasterProcess, uuid: str, count: int) -> np.ndarray:
    """The first ``count`` weights of a checkpoint (its first variables but the random
    generators' states: ``model.get_weights()``), flattened."""
    state = master.home / "pedl" / "checkpoints" / uuid / "state"
    index = json.loads((state / "variables.json").read_text())
    blob = np.fromfile(state / "variables.bin", dtype=np.uint8)
    weights = [e for e in index if "seed_generator" not in e["path"]][:count]
    parts = [
        blob[e["offset"] : e["offset"] + e["nbytes"]].view(np.dtype(e["dtype"])).reshape(-1)
        for e in weights
    ]
    return np.concatenate(parts)


def check_best(
    master: MasterProcess,
    kind: str,
    experiment_id: int,
    found: list[dict[str, Any]],
    tmp_path: Path,
) -> None:
    """``get_best_models()`` in the script is the best trial's model with its best
    checkpoint's weights; ``get_best_hyperparameters()`` its values."""
    metric, smaller = OBJECTIVES[kind]
    scored = [t for t in found if t["best_validation"] is not None]
    best = (min if smaller else max)(scored, key=lambda t: t["best_validation"])
    output, workdir = results(master, experiment_id, tmp_path)
    assert "Results summary" in output and f'name="{metric}"' in output, output
    line = next(x for x in output.splitlines() if x.startswith("BEST_HPS "))
    values = eval(line.removeprefix("BEST_HPS "))  # a dict the script printed
    expected = dict(best["hparams"])
    if not expected["dropout"]:
        del expected["rate"]  # inactive: outside its conditional scope
    assert values == expected
    weights = np.load(workdir / "best_weights.npy")
    stored = checkpoint_weights(master, best["best_checkpoint_uuid"], 4)
    assert weights.shape == stored.shape
    assert np.array_equal(weights, stored)


def test_random_search(master: MasterProcess, tmp_path: Path) -> None:
    experiment_id, found = run_search(master, "random")
    assert len(found) == 3
    assert all(t["state"] == "COMPLETED" for t in found)
    check_space("random", found)
    assert len({t["hparams"]["lr"] for t in found}) == 3
    check_best(master, "random", experiment_id, found, tmp_path)


def test_grid_search(master: MasterProcess, tmp_path: Path) -> None:
    experiment_id, found = run_search(master, "grid")
    check_space("grid", found)
    points = {(t["hparams"]["units"], t["hparams"]["dropout"]) for t in found}
    assert points == {(16, False), (16, True), (32, False), (32, True)}
    assert len(found) == 4
    check_best(master, "grid", experiment_id, found, tmp_path)


def test_hyperband_as_adaptive_asha(master: MasterProcess, tmp_path: Path) -> None:
    experiment_id, found = run_search(master, "hyperband")
    # KerasTuner's Hyperband(max_epochs=2, factor=2) starts 4 trials in its 2 brackets.
    assert len(found) == 4
    check_space("hyperband", found)
    batches_per_epoch = math.ceil(512 / 64)
    assert max(t["total_batches"] for t in found) == 2 * batches_per_epoch
    check_best(master, "hyperband", experiment_id, found, tmp_path)


def test_bayesian_optimization_runs_as_gp(master: MasterProcess, tmp_path: Path) -> None:
    missing = missing_optuna_requirements("gp")
    experiment_id = create_experiment(master.http, config("bayesian"), MODEL_DIR)
    if missing is not None:
        body = wait_for(master.http, experiment_id, {"ERROR"}, timeout=300, master=master)
        assert "BayesianOptimizationOracle runs as PEDL's gp searcher" in body["error"]
        assert missing in body["error"]
        return
    wait_for(master.http, experiment_id, {"COMPLETED"}, timeout=900, master=master)
    found = trials(master.http, experiment_id)
    assert len(found) == 3
    check_space("bayesian", found)
    check_best(master, "bayesian", experiment_id, found, tmp_path)


# A config that names no searcher: the script's tuner implies it.
IMPLIED = (
    "name: kerastuner-{kind}-implied\n"
    "entrypoint: python3 search.py --tuner {kind}\n"
    "max_restarts: 0\n"
    "reproducibility: {{experiment_seed: 7}}\n"
)


def cli_create(
    master: MasterProcess,
    command: str,
    config_text: str | None,
    tmp_path: Path,
    model_dir: Path = MODEL_DIR,
) -> int:
    """``COMMAND experiment create search.yaml .`` (``pedl`` or ``det``), run as a user runs
    it from a copy of the model directory holding the config (``config_text``, or the
    directory's own): the new experiment's id."""
    workdir = tmp_path / f"{command}-model"
    shutil.copytree(model_dir, workdir)
    if config_text is not None:
        (workdir / "search.yaml").write_text(config_text)
    env = {
        **os.environ,
        "PEDL_MASTER": master.url,
        "DET_MASTER": master.url,
        "TF_CPP_MIN_LOG_LEVEL": "2",
    }
    done = subprocess.run(
        [str(Path(sys.executable).parent / command), "experiment", "create", "search.yaml", "."],
        cwd=workdir,
        env=env,
        capture_output=True,
        text=True,
        timeout=scaled(900),
    )
    assert done.returncode == 0, done.stdout + done.stderr
    found = re.search(r"Created experiment (\d+)", done.stdout + done.stderr)
    assert found is not None, done.stdout + done.stderr
    return int(found.group(1))


def test_a_config_naming_no_searcher_runs_the_scripts_hyperband(
    master: MasterProcess, tmp_path: Path
) -> None:
    """``pedl experiment create search.yaml .`` of a config with only the entrypoint (and a
    seed): the master fills in Hyperband's searcher (its objective, max_epochs and the
    training data's examples per epoch) and runs it as adaptive_asha."""
    config_text = IMPLIED.format(kind="hyperband")
    experiment_id = cli_create(master, "pedl", config_text, tmp_path)
    body = experiment(master.http, experiment_id)
    searcher = body["config"]["searcher"]
    assert searcher["name"] == "custom"
    assert searcher["search_method"] == "pedl.tuner:KerasTunerSearch"
    assert (searcher["metric"], searcher["smaller_is_better"]) == ("val_loss", True)
    assert searcher["max_length"] == {"epochs": 2}
    assert body["config"]["records_per_epoch"] == 512
    wait_for(master.http, experiment_id, {"COMPLETED"}, timeout=900, master=master)
    found = trials(master.http, experiment_id)
    assert len(found) == 4
    check_space("hyperband", found)
    assert max(t["total_batches"] for t in found) == 2 * math.ceil(512 / 64)
    check_best(master, "hyperband", experiment_id, found, tmp_path)


def test_det_create_of_a_metricless_tuner_searcher(master: MasterProcess, tmp_path: Path) -> None:
    """``det e create`` of a config naming the KerasTuner searcher without its metric: the
    tuner's objective (val_accuracy, to maximise) fills it in."""
    config_text = (
        IMPLIED.format(kind="random")
        + "searcher: {name: custom, search_method: pedl.tuner:KerasTunerSearch}\n"
    )
    experiment_id = cli_create(master, "det", config_text, tmp_path)
    searcher = experiment(master.http, experiment_id)["config"]["searcher"]
    assert (searcher["metric"], searcher["smaller_is_better"]) == ("val_accuracy", False)
    wait_for(master.http, experiment_id, {"COMPLETED"}, timeout=900, master=master)
    found = trials(master.http, experiment_id)
    assert len(found) == 3
    check_space("random", found)
    check_best(master, "random", experiment_id, found, tmp_path)


def test_a_config_leaving_its_searcher_to_a_script_is_checked_at_create(
    master: MasterProcess, tmp_path: Path
) -> None:
    """422 on ``config.searcher``, with the script's own message, where the script does not
    reach ``tuner.search``; a script without KerasTuner still needs a searcher, as before."""
    config_text = IMPLIED.format(kind="random").replace("--tuner random", "--no-such-flag")
    archive = base64.b64encode(model_def.package(MODEL_DIR)).decode()
    response = master.http.post(
        "/experiments",
        json={"config": config_text, "model_definition": archive},
        timeout=scaled(600),
    )
    assert response.status_code == 422, response.text
    body = response.json()["error"]
    assert body["field"] == "config.searcher"
    assert "exited with status 2" in body["message"]
    assert "unrecognized arguments: --no-such-flag" in body["message"]

    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "train.py").write_text("import keras\nprint(keras.__version__)\n")
    archive = base64.b64encode(model_def.package(plain)).decode()
    response = master.http.post(
        "/experiments",
        json={"config": "entrypoint: python3 train.py\n", "model_definition": archive},
    )
    assert response.status_code == 422, response.text
    assert "missing required field 'searcher'" in response.text


def test_the_example_as_its_readme_runs_it(master: MasterProcess, tmp_path: Path) -> None:
    """examples/digits_kerastuner as its README says: ``pedl experiment create search.yaml .``
    from its directory (a config naming no searcher), then ``python -m pedl.tuner ID`` there:
    the search completes with RandomSearch's 4 trials and the script's code after
    ``tuner.search`` runs on the best model."""
    experiment_id = cli_create(master, "pedl", None, tmp_path, EXAMPLE)
    searcher = experiment(master.http, experiment_id)["config"]["searcher"]
    assert searcher == {
        **searcher,
        "name": "custom",
        "search_method": "pedl.tuner:KerasTunerSearch",
        "metric": "val_accuracy",
        "smaller_is_better": False,
    }
    wait_for(master.http, experiment_id, {"COMPLETED"}, timeout=1200, master=master)
    found = trials(master.http, experiment_id)
    assert len(found) == 4 and all(t["state"] == "COMPLETED" for t in found)
    env = {**os.environ, "PEDL_MASTER": master.url, "TF_CPP_MIN_LOG_LEVEL": "2"}
    done = subprocess.run(
        [sys.executable, "-m", "pedl.tuner", str(experiment_id)],
        cwd=tmp_path / "pedl-model",
        env=env,
        capture_output=True,
        text=True,
        timeout=scaled(600),
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Results summary" in done.stdout, done.stdout
    assert "best model's validation:" in done.stdout, done.stdout


def create_left_to_script(master: MasterProcess, config_text: str) -> int:
    """POST /experiments of a config that leaves its searcher to the script (the master runs
    the script up to tuner.search first: a longer wait than the test client's default)."""
    archive = base64.b64encode(model_def.package(MODEL_DIR)).decode()
    response = master.http.post(
        "/experiments",
        json={"config": config_text, "model_definition": archive},
        timeout=scaled(600),
    )
    assert response.status_code == 201, response.text
    experiment_id: int = response.json()["id"]
    return experiment_id


def restarted(master: MasterProcess) -> MasterProcess:
    """SIGKILL the master and start it again on the same home (database) and address."""
    master.sigkill()
    master.http.close()
    again = MasterProcess(master.home, cpu_slots=master.cpu_slots, env=master.env)
    again.port, again.url = master.port, master.url
    again.http = httpx.Client(base_url=master.url + "/api/v1", timeout=scaled(30))
    return again.start()


def identities(found: list[dict[str, Any]]) -> list[tuple[str, str, int]]:
    """Each trial's request id, hyperparameters and seed, in creation order."""
    return [(t["request_id"], json.dumps(t["hparams"], sort_keys=True), t["seed"]) for t in found]


def test_the_master_killed_mid_search_finishes_with_the_same_trials(tmp_path: Path) -> None:
    """A KerasTuner RandomSearch (its config naming no searcher) on a master SIGKILLed while
    the search's second trial runs, then restarted on the same database: the search completes
    with the trials (request ids, hyperparameters, seeds) of an undisturbed run with the same
    seed, and get_best_models() in the script is its best trial's model."""
    env = {"PEDL_AUTH": "false", "PEDL_SEARCHER_START_TIMEOUT": str(scaled(600))}
    config_text = IMPLIED.format(kind="random").replace("max_restarts: 0\n", "")
    undisturbed = MasterProcess(tmp_path / "undisturbed", cpu_slots=1, env=env).start()
    try:
        reference = create_left_to_script(undisturbed, config_text)
        wait_for(undisturbed.http, reference, {"COMPLETED"}, timeout=900, master=undisturbed)
        expected = identities(trials(undisturbed.http, reference))
    finally:
        undisturbed.stop()
    assert len(expected) == 3

    master = MasterProcess(tmp_path / "killed", cpu_slots=1, env=env).start()
    try:
        experiment_id = create_left_to_script(master, config_text)
        # One slot: trial 1 trains, ends, then trial 2 starts; killed once trial 2 has begun.
        deadline = time.monotonic() + scaled(600)
        while True:
            found = trials(master.http, experiment_id)
            if len(found) >= 2 and found[0]["state"] == "COMPLETED":
                break
            assert time.monotonic() < deadline, found
            time.sleep(0.2)
        assert experiment(master.http, experiment_id)["state"] == "ACTIVE"
        master = restarted(master)
        wait_for(master.http, experiment_id, {"COMPLETED"}, timeout=900, master=master)
        found = trials(master.http, experiment_id)
        assert master.log().count("PEDL master listening") == 2  # started, restarted
        assert identities(found) == expected
        assert all(t["state"] == "COMPLETED" for t in found)
        check_space("random", found)
        check_best(master, "random", experiment_id, found, tmp_path)
    finally:
        master.stop()
