"""Model definitions in the style of each Determined era and of the PEDL 0.x seed form.

Each one passes ``pedl experiment create --test`` (the smoke test), runs locally to the end,
and records, chunk by chunk, the training and validation metrics that plain Keras ``fit``
gives the same model epoch by epoch (:mod:`tests.compat.reference`). They import
``determined`` through PEDL's compatibility package (the PEDL 0.x one imports ``pedl``, as its
seed does).
"""

from __future__ import annotations

from pathlib import Path

import keras
import numpy as np
import pytest

from pedl.config import load_config
from pedl.local import LocalExperiment, smoke_test
from pedl.vocabulary import MetricKind
from tests import local_record as record

from . import reference

ERAS = ["det2020_iris", "det_adapters_iris", "det02x_digits", "det038_iris", "pedl0x_iris"]
RESHUFFLED_DATASETS = {"det02x_digits", "pedl0x_iris"}
"""Models whose training ``tf.data.Dataset`` reshuffles each pass (``shuffle(seed=)``). PEDL
trains on the dataset repeated, so pass n has the order the dataset's n-th iteration gives
(as ``dataset.repeat()`` does); Keras' ``fit(dataset, epochs=)`` draws its later passes'
shuffle seeds otherwise. The first epoch is the same batches in the same order, so the
metrics are compared for it; for the other models, for every epoch."""


@pytest.mark.slow
@pytest.mark.parametrize("name", ERAS)
def test_era_model_definition_runs_and_matches_plain_keras(tmp_path: Path, name: str) -> None:
    model_dir = reference.MODELS / name
    config_path = model_dir / "const.yaml"
    steps = smoke_test(config_path, model_dir)
    assert [s.ok for s in steps] == [True] * len(steps), steps

    experiment = LocalExperiment.create(config_path, model_dir, tmp_path)
    summary = experiment.run()
    experiment.close()
    assert summary.state == "COMPLETED", [t.error for t in summary.trials]
    (trial,) = record.trials(experiment.directory)
    training = record.metric_rows(experiment.directory, trial.id, MetricKind.TRAINING)
    validation = record.metric_rows(experiment.directory, trial.id, MetricKind.VALIDATION)

    config = load_config(config_path)
    epochs = len(validation)
    hparams = {k: v.val for k, v in config.hyperparameters.items()}  # type: ignore[union-attr]
    plain = reference.run(name, trial.seed, hparams, epochs)
    batches_per_epoch = config.records_per_epoch // hparams["global_batch_size"]
    assert [b for _, b, _ in training] == [batches_per_epoch * (e + 1) for e in range(epochs)]
    compared = 1 if name in RESHUFFLED_DATASETS else epochs
    for key, values in plain.items():
        rows = validation if key.startswith("val_") else training
        recorded = [metrics[key] for _, _, metrics in rows][:compared]
        np.testing.assert_allclose(recorded, values[:compared], rtol=1e-5, atol=1e-6, err_msg=key)


@pytest.mark.slow
def test_det038_callback_script_runs_and_matches_plain_keras(tmp_path: Path) -> None:
    """Determined 0.38's script form (``det.core.init()``, ``det.keras.DeterminedCallback``)
    imported through the compatibility package: smoke test, a local run, and per epoch the
    metrics plain Keras ``fit`` gives the same script's model."""
    model_dir = reference.MODELS / "det038_script"
    config_path = model_dir / "const.yaml"
    steps = smoke_test(config_path, model_dir)
    assert [s.ok for s in steps] == [True] * len(steps), steps

    experiment = LocalExperiment.create(config_path, model_dir, tmp_path)
    summary = experiment.run()
    experiment.close()
    assert summary.state == "COMPLETED", [t.error for t in summary.trials]
    (trial,) = record.trials(experiment.directory)
    training = record.metric_rows(experiment.directory, trial.id, MetricKind.TRAINING)
    validation = record.metric_rows(experiment.directory, trial.id, MetricKind.VALIDATION)
    assert [b for _, b, _ in training] == [4, 8, 12]
    assert [b for _, b, _ in validation] == [4, 8, 12]

    script = reference.script_module("det038_script")
    config = load_config(config_path)
    hparams = {k: v.val for k, v in config.hyperparameters.items()}  # type: ignore[union-attr]
    keras.utils.set_random_seed(trial.seed)
    model = script.build_model(hparams)
    (x, y), held_out = script.load_data()
    history = model.fit(
        x,
        y,
        batch_size=hparams["global_batch_size"],
        epochs=3,
        shuffle=False,
        validation_data=held_out,
        verbose=0,
    ).history
    for key, values in history.items():
        rows = validation if key.startswith("val_") else training
        recorded = [metrics[key] for _, _, metrics in rows]
        np.testing.assert_allclose(recorded, values, rtol=1e-5, atol=1e-6, err_msg=key)


@pytest.mark.slow
def test_det038_script_decides_its_own_length_and_batch_size(tmp_path: Path) -> None:
    """No ``searcher.max_length`` and no ``global_batch_size``: the script's ``fit(batch_size=30,
    epochs=2)`` decides (2 epochs of 120 records = 8 batches), and the searcher metric is
    named as 0.38's DeterminedCallback reports it (``categorical_accuracy``, validation)."""
    model_dir = reference.MODELS / "det038_own_length"
    experiment = LocalExperiment.create(model_dir / "const.yaml", model_dir, tmp_path)
    summary = experiment.run()
    experiment.close()
    assert summary.state == "COMPLETED", [t.error for t in summary.trials]
    (trial,) = record.trials(experiment.directory)
    training = record.metric_rows(experiment.directory, trial.id, MetricKind.TRAINING)
    validation = record.metric_rows(experiment.directory, trial.id, MetricKind.VALIDATION)
    assert [b for _, b, _ in training] == [4, 8]
    assert [(b, m["batches"], m["epochs"]) for _, b, m in validation] == [(4, 4, 1), (8, 8, 2)]
    for _, _, metrics in validation:
        assert metrics["categorical_accuracy"] == metrics["val_categorical_accuracy"]
        assert metrics["loss"] == metrics["val_loss"]
    assert "val_loss" not in training[0][2] and training[0][2]["epochs"] == 1
