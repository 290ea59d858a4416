"""Local mode end to end: searches, summaries, failures, environment, retention."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path
from typing import Any

import httpx
import pytest

from pedl.db import Database
from pedl.db import checkpoints as checkpoints_repo
from pedl.db import metrics as metrics_repo
from pedl.db import trials as trials_repo
from pedl.local import LocalExperiment
from pedl.master import MasterSettings, create_app
from pedl.searcher import missing_optuna_requirements
from pedl.vocabulary import CheckpointState, MetricKind, TrialOutcome
from tests.master.helpers import LiveServer, sign_in
from tests.waits import scaled

MODEL = """
import os
import keras
import numpy as np
from pedl.keras import TFKerasTrial


def blobs(n, seed):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 4)).astype("float32")
    return x, (x[:, 0] > 0).astype("int32")


class Tiny(TFKerasTrial):
    def build_model(self):
        if self.context.get_hparam("units") == 0:
            raise ValueError("units must be positive")
        os.environ["PEDL_TEST_SEEN_ENV"] = os.environ.get("PEDL_TEST_ENV", "")
        model = self.context.wrap_model(keras.Sequential([
            keras.Input((4,)),
            keras.layers.Dense(self.context.get_hparam("units"), activation="relu"),
            keras.layers.Dense(2, activation="softmax"),
        ]))
        model.compile(
            self.context.wrap_optimizer(keras.optimizers.Adam(self.context.get_hparam("lr"))),
            "sparse_categorical_crossentropy",
            metrics=["accuracy"],
        )
        return model

    def build_training_data_loader(self):
        return blobs(64, 0)

    def build_validation_data_loader(self):
        return blobs(32, 1)
"""


def write_experiment(tmp_path: Path, config: str, model: str = MODEL) -> tuple[Path, Path]:
    model_dir = tmp_path / "model"
    model_dir.mkdir()
    (model_dir / "__init__.py").write_text(model)
    config_path = tmp_path / "config.yaml"
    text = textwrap.dedent(config).replace("CHECKPOINTS", str(tmp_path / "checkpoints"))
    config_path.write_text(text)
    return config_path, model_dir


GRID = """
name: grid
hyperparameters:
  global_batch_size: 16
  units: {type: categorical, vals: [4, 8]}
  lr: {type: categorical, vals: [0.01, 0.05]}
searcher:
  name: grid
  metric: val_accuracy
  smaller_is_better: false
  max_length: {batches: 8}
min_validation_period: {batches: 4}
checkpoint_policy: all
checkpoint_storage:
  type: shared_fs
  host_path: CHECKPOINTS
  save_trial_latest: 1
  save_trial_best: 1
  save_experiment_best: 0
environment:
  environment_variables: [PEDL_TEST_ENV=from-config]
reproducibility: {experiment_seed: 5}
"""


def test_grid_search_runs_every_point_and_summarises(tmp_path: Path) -> None:
    config, model = write_experiment(tmp_path, GRID)
    os.environ.pop("PEDL_TEST_SEEN_ENV", None)
    exp = LocalExperiment.create(config, model, tmp_path / "out")
    summary = exp.run()
    assert exp.directory == tmp_path / "out" / "exp-1"
    assert summary.state == "COMPLETED"
    assert sorted((t.hparams["units"], t.hparams["lr"]) for t in summary.trials) == [
        (4, 0.01),
        (4, 0.05),
        (8, 0.01),
        (8, 0.05),
    ]
    assert all(t.state == "COMPLETED" for t in summary.trials)
    best = summary.best_trial
    assert best is not None and best.best_metric == max(t.best_metric or 0 for t in summary.trials)
    assert best.best_checkpoint is not None and (best.best_checkpoint / "metadata.json").exists()
    assert best.best_checkpoint_location == str(best.best_checkpoint)
    # The config's environment variables were set while the trial ran, and removed after.
    assert os.environ.pop("PEDL_TEST_SEEN_ENV") == "from-config"
    assert "PEDL_TEST_ENV" not in os.environ
    # Retention: per trial, the latest and the best checkpoint survive (one or two).
    # The record is the master's schema: read it with the master's repositories.
    with exp.database.session() as session:
        for trial in trials_repo.list_trials(session, exp.experiment_id)[0]:
            kept = [c.uuid for c, _ in _checkpoints(session, trial.id, CheckpointState.COMPLETED)]
            assert 1 <= len(kept) <= 2
            assert trial.latest_checkpoint_uuid in kept
            rows = metrics_repo.list_metrics(session, trial.id, kind=MetricKind.VALIDATION)
            assert [r.total_batches for r in rows] == [4, 8]
            assert trial.outcome == TrialOutcome.COMPLETED
        deleted = [
            c.uuid
            for t in trials_repo.list_trials(session, exp.experiment_id)[0]
            for c, _ in _checkpoints(session, t.id, CheckpointState.DELETED)
        ]
    assert deleted and not any(exp.storage.exists(uuid) for uuid in deleted)
    exp.close()


def _checkpoints(session: Any, trial_id: int, state: CheckpointState) -> list[Any]:
    return checkpoints_repo.list_checkpoints(session, trial_id=trial_id, states=[state])[0]


def test_a_second_experiment_gets_its_own_directory(tmp_path: Path) -> None:
    config, model = write_experiment(
        tmp_path,
        GRID.replace("vals: [4, 8]", "vals: [4]").replace("vals: [0.01, 0.05]", "vals: [0.01]"),
    )
    first = LocalExperiment.create(config, model, tmp_path / "out")
    second = LocalExperiment.create(config, model, tmp_path / "out")
    assert (first.directory.name, second.directory.name) == ("exp-1", "exp-2")
    first.close()
    second.close()


def test_random_search_samples_distinct_hyperparameters(tmp_path: Path) -> None:
    config, model = write_experiment(
        tmp_path,
        """
        hyperparameters:
          global_batch_size: 16
          units: {type: int, minval: 2, maxval: 64}
          lr: {type: log, minval: -3, maxval: -1}
        searcher: {name: random, metric: val_loss, max_trials: 3, max_length: {batches: 3}}
        reproducibility: {experiment_seed: 8}
        """,
    )
    exp = LocalExperiment.create(config, model, tmp_path / "out")
    summary = exp.run()
    assert summary.state == "COMPLETED" and len(summary.trials) == 3
    assert len({t.hparams["lr"] for t in summary.trials}) == 3
    assert all(0.001 <= t.hparams["lr"] <= 0.1 for t in summary.trials)
    assert summary.best_trial is not None
    exp.close()


def test_a_failing_trial_errors_with_its_traceback_and_the_search_goes_on(tmp_path: Path) -> None:
    config, model = write_experiment(
        tmp_path,
        GRID.replace("vals: [4, 8]", "vals: [0, 4]").replace("vals: [0.01, 0.05]", "vals: [0.01]")
        + "max_restarts: 1\n",
    )
    exp = LocalExperiment.create(config, model, tmp_path / "out")
    summary = exp.run()
    by_units = {t.hparams["units"]: t for t in summary.trials}
    failed, ok = by_units[0], by_units[4]
    assert failed.state == "ERROR"
    assert failed.error is not None
    assert (failed.error.type, failed.error.message) == ("ValueError", "units must be positive")
    line = MODEL.splitlines().index('            raise ValueError("units must be positive")') + 1
    assert failed.error.location == f"__init__.py:{line}"
    assert "build_model" in failed.error.traceback
    # Before training progressed: the same error would recur, so it is not restarted.
    assert failed.error.before_progress
    assert ok.state == "COMPLETED"
    assert summary.state == "COMPLETED"
    assert exp.trial(failed.trial_id).restarts == 0
    exp.close()


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("def broken(:\n", "SyntaxError"),
        ("import no_such_module_here\n", "No module named 'no_such_module_here'"),
    ],
)
def test_a_broken_model_definition_errors_every_trial(
    tmp_path: Path, source: str, message: str
) -> None:
    config, model = write_experiment(tmp_path, GRID + "max_restarts: 0\n", model=source)
    exp = LocalExperiment.create(config, model, tmp_path / "out")
    summary = exp.run()
    assert summary.state == "ERROR"
    assert all(
        t.state == "ERROR" and t.error and message in t.error.summary() for t in summary.trials
    )
    assert summary.error is not None and "every trial failed" in summary.error
    exp.close()


def test_bad_config_is_refused_before_anything_is_created(tmp_path: Path) -> None:
    config, model = write_experiment(tmp_path, GRID.replace("max_length", "max_lenght"))
    with pytest.raises(ValueError, match="did you mean 'max_length'"):
        LocalExperiment.create(config, model, tmp_path / "out")
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


def test_a_local_run_opens_in_the_master(tmp_path: Path) -> None:
    config, model = write_experiment(
        tmp_path,
        GRID.replace("vals: [4, 8]", "vals: [4]").replace("vals: [0.01, 0.05]", "vals: [0.05]"),
    )
    exp = LocalExperiment.create(config, model, tmp_path / "out")
    summary = exp.run()
    exp.close()
    url = f"sqlite:///{exp.directory / 'experiment.db'}"
    server = LiveServer(create_app(MasterSettings(home=tmp_path / "home", db_url=url)))
    server.start()
    database = Database(url)
    try:
        # A first read of a fresh master can take seconds on a loaded CI machine (httpx's
        # default timeout is 5 s); latency is for the benchmarks, not this test.
        with httpx.Client(
            base_url=server.url + "/api/v1", timeout=scaled(30), headers=sign_in(database)
        ) as http:
            (experiment,) = http.get("/experiments").json()["items"]
            assert experiment["state"] == "COMPLETED"
            (trial,) = http.get(f"/experiments/{experiment['id']}/trials").json()["items"]
            assert trial["outcome"] == "COMPLETED"
            assert trial["best_validation"] == summary.trials[0].best_metric
            archive = http.get(f"/experiments/{experiment['id']}/model_definition")
            assert archive.status_code == 200 and archive.content
            # Sampled while it ran (a last sample at its end, however short), as on a master.
            system = http.get(f"/trials/{trial['id']}/system-metrics").json()
            assert system["total"] >= 1, system
            assert {sample["rank"] for sample in system["samples"]} == {0}
            assert system["samples"][-1]["metrics"]["process_rss_bytes"] > 0
    finally:
        server.stop()
        database.dispose()


SINGLE = (
    GRID.replace("name: grid\n", "name: single\n", 1)
    .replace("units: {type: categorical, vals: [4, 8]}", "units: 4")
    .replace("lr: {type: categorical, vals: [0.01, 0.05]}", "lr: 0.05")
    .replace("name: grid", "name: single")
)


def test_a_local_run_warm_starts_from_a_checkpoint_in_its_storage(tmp_path: Path) -> None:
    config, model = write_experiment(tmp_path, SINGLE)
    source = LocalExperiment.create(config, model, tmp_path / "out")
    (trial,) = source.run().trials
    with source.database.session() as session:
        rows = metrics_repo.list_metrics(session, trial.trial_id, kind=MetricKind.VALIDATION)
        latest = trials_repo.get_trial(session, trial.trial_id).latest_checkpoint_uuid
    source.close()
    final = next(r.metrics for r in rows if r.total_batches == 8)
    assert latest is not None

    warm_text = (
        SINGLE.replace(
            "metric: val_accuracy", f"metric: val_accuracy\n  source_checkpoint_uuid: {latest}"
        )
        + "perform_initial_validation: true\n"
    )
    (tmp_path / "warm.yaml").write_text(
        warm_text.replace("CHECKPOINTS", str(tmp_path / "checkpoints"))
    )
    warm = LocalExperiment.create(tmp_path / "warm.yaml", model, tmp_path / "out")
    (warm_trial,) = warm.run().trials
    with warm.database.session() as session:
        warm_rows = metrics_repo.list_metrics(
            session, warm_trial.trial_id, kind=MetricKind.VALIDATION
        )
    warm.close()
    assert [r.metrics for r in warm_rows if r.total_batches == 0] == [final]
    assert max(r.total_batches for r in warm_rows) == 8  # its own counters, from 0

    for field, line in [
        ("searcher.source_trial_id", "source_trial_id: 1"),
        ("searcher.source_checkpoint_uuid", "source_checkpoint_uuid: 0000aaaa-0000"),
    ]:
        (tmp_path / "bad.yaml").write_text(
            SINGLE.replace("metric: val_accuracy", f"metric: val_accuracy\n  {line}").replace(
                "CHECKPOINTS", str(tmp_path / "checkpoints")
            )
        )
        with pytest.raises(ValueError, match=field.replace(".", r"\.")):
            LocalExperiment.create(tmp_path / "bad.yaml", model, tmp_path / "bad-out")


@pytest.mark.skipif(
    missing_optuna_requirements("gp") is None, reason="torch and scipy are installed here"
)
def test_a_searcher_whose_dependencies_are_missing_is_refused_before_anything_runs(
    tmp_path: Path,
) -> None:
    gp = SINGLE.replace("name: single\n  metric", "name: gp\n  max_trials: 2\n  metric", 1).replace(
        "units: 4", "units: {type: int, minval: 2, maxval: 8}"
    )
    config, model = write_experiment(tmp_path, gp)
    with pytest.raises(ValueError, match=r"searcher\.name: The gp searcher needs PyTorch"):
        LocalExperiment.create(config, model, tmp_path / "out")
