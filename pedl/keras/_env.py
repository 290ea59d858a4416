"""``context.env``: the trial's environment as Determined's ``EnvContext`` presented it.

Model definitions written against Determined read ``self.context.env.experiment_config``,
``.hparams``, ``.trial_seed``, ``.det_trial_id`` and friends; PEDL fills the same names from
the trial it runs. Fields that describe Determined's containers and agents (``master_addr``,
``container_gpus``, ...) hold what is true of a PEDL trial process.
"""

from __future__ import annotations

import os
from typing import Any

from pedl import core


class ExperimentConfigDict(dict[str, Any]):
    """The experiment configuration as a plain dict, with Determined's accessor methods."""

    def debug_enabled(self) -> bool:
        return bool(self.get("debug", False))

    def scheduling_unit(self) -> int:
        return int(self.get("scheduling_unit", 100))

    def slots_per_trial(self) -> int:
        return int((self.get("resources") or {}).get("slots_per_trial", 1))

    def native_parallel_enabled(self) -> bool:
        return bool((self.get("resources") or {}).get("native_parallel", False))

    def averaging_training_metrics_enabled(self) -> bool:
        return bool((self.get("optimizations") or {}).get("average_training_metrics", True))

    def experiment_seed(self) -> int:
        return int((self.get("reproducibility") or {}).get("experiment_seed", 0))

    def profiling_enabled(self) -> bool:
        return bool((self.get("profiling") or {}).get("enabled", False))

    def get_records_per_epoch(self) -> int | None:
        value = self.get("records_per_epoch")
        return int(value) if value else None

    def get_min_validation_period(self) -> dict[str, Any]:
        return dict(self.get("min_validation_period") or {})

    def get_min_checkpoint_period(self) -> dict[str, Any]:
        return dict(self.get("min_checkpoint_period") or {})

    def get_searcher_metric(self) -> str:
        return str(self["searcher"]["metric"])

    def get_optimizations_config(self) -> dict[str, Any]:
        return dict(self.get("optimizations") or {})

    def get_data_layer_type(self) -> str:
        return str((self.get("data_layer") or {}).get("type", "shared_fs"))


class EnvContext:
    """What Determined's ``context.env`` held, for the trial PEDL is running.

    ``experiment_config`` (an :class:`ExperimentConfigDict`), ``hparams``, ``trial_seed``,
    ``det_trial_id``/``det_experiment_id`` (strings, as Determined gave them),
    ``latest_checkpoint``, ``per_slot_batch_size``/``global_batch_size``, ``use_gpu``,
    ``container_gpus``, ``slot_ids``, ``debug``, ``managed_training`` (True: PEDL drives the
    training), ``test_mode`` and ``on_cluster``.
    """

    def __init__(self, info: core.TrialInfo, distributed: core.DistributedContext) -> None:
        config = ExperimentConfigDict(info.config.as_dict())
        self.experiment_config = config
        self.hparams: dict[str, Any] = dict(info.hparams)
        self.trial_seed = info.trial_seed
        self.det_trial_id = str(info.trial_id)
        self.det_experiment_id = str(info.experiment_id)
        self.trial_id = info.trial_id
        self.experiment_id = info.experiment_id
        self.latest_checkpoint = info.latest_checkpoint
        self.debug = config.debug_enabled()
        self.managed_training = True
        self.test_mode = False
        self.on_cluster = "PEDL_MASTER_URL" in os.environ
        gpus = [g for g in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if g]
        self.container_gpus = gpus
        self.use_gpu = bool(gpus)
        self.slot_ids = list(range(max(len(gpus), 1)))
        self.master_url = os.environ.get("PEDL_MASTER_URL", "")
        slots = max(distributed.get_size(), 1)
        global_batch_size = info.hparams.get("global_batch_size")
        self.global_batch_size: int | None = (
            global_batch_size if isinstance(global_batch_size, int) else None
        )
        self.per_slot_batch_size: int | None = (
            global_batch_size // slots if isinstance(global_batch_size, int) else None
        )

    def __repr__(self) -> str:
        return (
            f"EnvContext(trial_id={self.trial_id}, experiment_id={self.experiment_id}, "
            f"trial_seed={self.trial_seed})"
        )
