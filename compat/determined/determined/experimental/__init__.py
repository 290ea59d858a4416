"""``determined.experimental``: the client SDK (``client``) as PEDL's ``pedl.client``."""

from __future__ import annotations

from typing import Any

from determined._unsupported import module_getattr

_getattr = module_getattr(
    "determined.experimental",
    forwards={
        "client": "determined.experimental.client",
        "Determined": "pedl.client:Client",
        "Checkpoint": "pedl.client:Checkpoint",
        "ExperimentReference": "pedl.client:Experiment",
        "TrialReference": "pedl.client:Trial",
        "Model": "pedl.client:Model",
        "ModelVersion": "pedl.client:ModelVersion",
        "ModelSortBy": "pedl.client:ModelSortBy",
        "Workspace": "pedl.client:Workspace",
        "Project": "pedl.client:Project",
        "ModelOrderBy": "pedl.client:ModelOrderBy",
        "OrderBy": "pedl.client:OrderBy",
        "Trial": "pedl.client:Trial",
        "TrialOrderBy": "pedl.client:TrialOrderBy",
        "TrialSortBy": "pedl.client:TrialSortBy",
        "Experiment": "pedl.client:Experiment",
    },
    unsupported={
        "create": "The Native API's experimental.create() left Determined in 0.15: write the "
        "experiment config as YAML and run `pedl experiment create config.yaml model_dir` "
        "(add --local to run it without a master, --test for a quick check)",
        "create_trial_instance": "Test a model definition with `pedl experiment create --test "
        "config.yaml model_dir` (pedl.local.smoke_test in Python)",
        "test_one_batch": "Test a model definition with `pedl experiment create --test "
        "config.yaml model_dir`",
        "ModelRegistry": "ModelRegistry left Determined long before 0.38: use "
        "client.create_model / client.get_model and Model.register_version",
    },
)


def __getattr__(name: str) -> Any:
    return _getattr(name)
