"""``pedl experiment create --test``: a fast check that a model definition works with PEDL.

It trains one short chunk, validates, checkpoints, then restores that checkpoint in a fresh
controller and trains one more batch, and says in plain words which step failed.

A script that checkpoints on its own schedule (a Core API loop saving every few steps) stores
nothing in the short chunk; it is run again from the start with its full length until its
first checkpoint, then asked to stop (``preempt.should_preempt()``), as Determined's searcher
stops a trial; after :data:`FIRST_CHECKPOINT_SECONDS` it is asked to stop anyway.
"""

from __future__ import annotations

import random
import tempfile
import time
import traceback
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pedl import core, model_def
from pedl._trial import TrialOutcome
from pedl.config import (
    ConfigError,
    ExperimentConfig,
    Length,
    grid_hparams,
    sample_hparams,
)
from pedl.config._searcher import OPEN_LENGTH
from pedl.local._config import load_run_config
from pedl.script import trial_class_of
from pedl.storage import SharedFSStorage

TRAIN_BATCHES = 2

FIRST_CHECKPOINT_SECONDS = 300.0
"""How long a script that stored no checkpoint in the short chunk may train, run again, before
it is asked to stop (it stops at its next ``should_preempt()``)."""


@dataclass(frozen=True)
class SmokeStep:
    name: str
    ok: bool
    detail: str = ""


def smoke_test(
    config_path: str | Path, model_dir: str | Path, overrides: Sequence[str] = ()
) -> list[SmokeStep]:
    """Run the checks; stop at the first failing step. Never raises for user errors."""
    steps: list[SmokeStep] = []
    try:
        config = load_run_config(config_path, model_dir, overrides)
    except (ConfigError, OSError) as e:
        return [SmokeStep("load the experiment config", False, str(e))]
    steps.append(SmokeStep("load the experiment config", True))
    with tempfile.TemporaryDirectory(prefix="pedl-test-") as tmp:
        code_dir = Path(tmp) / "model_def"
        try:
            model_def.copy_tree(model_dir, code_dir)
            definition = model_def.load(code_dir, config.entrypoint)
            trial_class = trial_class_of(definition)
            if trial_class is None:
                raise model_def.ModelDefError("the model definition has no Trial class")
        except (model_def.ModelDefError, OSError) as e:
            steps.append(SmokeStep("load the model definition", False, str(e)))
            return steps
        steps.append(SmokeStep("load the model definition", True, trial_class.__qualname__))
        test_config = _short_config(config)
        hparams = _first_hparams(config)
        storage = SharedFSStorage(Path(tmp) / "checkpoints")
        records = core.MemoryBackend([TRAIN_BATCHES])
        step = f"train {TRAIN_BATCHES} batches, validate and checkpoint"
        try:
            _run(definition, test_config, hparams, code_dir, storage, records, None)
            if not records.checkpoints and definition.trial_class is None:
                # A script checkpointing on its own schedule: again, until its first one.
                step = "train until the script's first checkpoint"
                definition = model_def.load(code_dir, config.entrypoint)
                records = _until_first_checkpoint(config)
                length = records.lengths[0]
                long_config = _short_config(config, length)
                _run(definition, long_config, hparams, code_dir, storage, records, None)
        except Exception as e:
            steps.append(SmokeStep(step, False, _explain(e)))
            return steps
        if not records.checkpoints:
            steps.append(
                SmokeStep(
                    step,
                    False,
                    "the trial stored no checkpoint: a script must call model.fit(), or "
                    "checkpoint through the Core API (core_context.checkpoint.store_path)",
                )
            )
            return steps
        checkpointed = records.checkpoints[-1][1]
        steps.append(
            SmokeStep(
                step,
                True,
                f"{config.searcher.metric} = {records.completed[-1][1]:.4g}"
                if records.completed
                else f"checkpoint at batch {checkpointed}",
            )
        )
        records.preempt = False
        records.lengths = [checkpointed + 1]
        test_config = _short_config(config, checkpointed + 1)
        try:
            definition = model_def.load(code_dir, config.entrypoint)
            _run(
                definition,
                test_config,
                hparams,
                code_dir,
                storage,
                records,
                records.checkpoints[-1][0],
            )
        except Exception as e:
            steps.append(SmokeStep("restore the checkpoint and train on", False, _explain(e)))
            return steps
        steps.append(SmokeStep("restore the checkpoint and train on", True))
    return steps


def _run(
    definition: model_def.ModelDefinition,
    config: ExperimentConfig,
    hparams: dict[str, Any],
    code_dir: Path,
    storage: SharedFSStorage,
    backend: core.MemoryBackend,
    latest_checkpoint: str | None,
) -> TrialOutcome:
    trial_class = trial_class_of(definition)
    assert trial_class is not None
    info = core.TrialInfo(
        trial_id=1,
        experiment_id=0,
        hparams=hparams,
        trial_seed=config.reproducibility.experiment_seed,
        config=config,
        code_dir=code_dir,
        latest_checkpoint=latest_checkpoint,
    )
    context = core.build_context(info, backend=backend, storage=storage)
    controller = trial_class.trial_controller_class.from_definition(definition, context)
    outcome: TrialOutcome = controller.run()
    return outcome


def _until_first_checkpoint(config: ExperimentConfig) -> core.MemoryBackend:
    """A searcher handing out the config's length in batches (else an open one, the
    script deciding), that asks the trial to stop once it stored a checkpoint or after
    :data:`FIRST_CHECKPOINT_SECONDS`."""
    length = config.searcher.max_length
    batches = length.value if length is not None and length.unit == "batches" else OPEN_LENGTH
    deadline = time.monotonic() + FIRST_CHECKPOINT_SECONDS
    records = core.MemoryBackend([batches])
    records.preempt = lambda: bool(records.checkpoints) or time.monotonic() > deadline
    return records


def _short_config(config: ExperimentConfig, batches: int = TRAIN_BATCHES) -> ExperimentConfig:
    never = Length(unit="batches", value=0)
    searcher = config.searcher.model_copy(
        update={"max_length": Length(unit="batches", value=batches)}
    )
    return config.model_copy(
        update={
            "searcher": searcher,
            "scheduling_unit": min(batches, TRAIN_BATCHES),
            "min_validation_period": never,
            "min_checkpoint_period": never,
            "perform_initial_validation": False,
            "checkpoint_policy": "all",
        }
    )


def _first_hparams(config: ExperimentConfig) -> dict[str, Any]:
    if config.searcher.name == "grid":
        return grid_hparams(config.hyperparameters)[0]
    return sample_hparams(
        config.hyperparameters, random.Random(config.reproducibility.experiment_seed)
    )


def _explain(error: BaseException) -> str:
    """The error in plain words, and where in the user's code it came from."""
    frames = traceback.extract_tb(error.__traceback__)
    user_frames = [
        f for f in frames if "/pedl/" not in f.filename and "site-packages" not in f.filename
    ]
    where = ""
    if user_frames:
        f = user_frames[-1]
        where = f"\n  at {Path(f.filename).name}:{f.lineno} in {f.name}: {f.line}"
    return f"{type(error).__name__}: {error}{where}"
