"""``/api/v1/experiments/{id}/continue`` and ``/preview_gc``: continuing an ended single,
grid or random search (``det experiment continue``) and what a retention policy would delete
(``det experiment set gc-policy``'s preview)."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Coroutine, Mapping
from typing import Annotated, Any

import yaml
from fastapi import APIRouter, Query, Request, Response
from fastapi.routing import APIRoute
from pydantic import BaseModel, ConfigDict, Field

from pedl.config._limits import parse_integer
from pedl.config._yaml import load_value
from pedl.db import checkpoints as checkpoints_repo
from pedl.db import continuation as continuation_repo
from pedl.db import experiments as experiments_repo
from pedl.db import metrics as metrics_repo
from pedl.db import trials as trials_repo
from pedl.master._settings import MasterSettings
from pedl.master.api._auth import OWNER_RESPONSES, USER_AUTH_RESPONSES, CurrentUser, require_owner
from pedl.master.api._config import refuse_unlaunchable, validate_experiment_config
from pedl.master.api._convert import checkpoint_public
from pedl.master.api._deps import DatabaseDep, ExperimentId
from pedl.master.api._errors import ERROR_RESPONSES, ApiError
from pedl.master.api._experiment_settings import (
    MAX_KEPT_CHECKPOINTS,
    doomed_checkpoints,
    stored_config,
)
from pedl.master.api._schemas import CheckpointPublic, ExperimentPublic
from pedl.vocabulary import TrialState


class _ConfigJSONRequest(Request):
    """A request whose JSON body's integers are read with :func:`parse_integer`: one with more
    digits than Python converts reaches the config's checks (422 naming its field), where
    FastAPI's parser would answer 400 for the whole body."""

    async def json(self) -> Any:
        if not hasattr(self, "_json"):
            self._json = json.loads(await self.body(), parse_int=parse_integer)
        return self._json


class _ConfigJSONRoute(APIRoute):
    """A route that parses its JSON body as :class:`_ConfigJSONRequest` does."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def route(request: Request) -> Response:
            return await handler(_ConfigJSONRequest(request.scope, request.receive))

        return route


router = APIRouter(
    prefix="/experiments",
    tags=["experiments"],
    responses={**ERROR_RESPONSES, **USER_AUTH_RESPONSES},
    route_class=_ConfigJSONRoute,
)

MAX_OVERRIDE_CHARS = 100_000
"""The longest override config (YAML text) ``continue`` takes."""
_CONTINUABLE = ("single", "grid", "random")
_REFUSED_KEYS = {
    "project": "'project' in override config cannot be specified",
    "workspace": "'workspace' in override config cannot be specified",
    "hyperparameters": "the hyperparameters cannot change when continuing: the trial keeps its "
    "own (create a new experiment to train with others)",
}

Count = Annotated[int, Query(ge=0, le=MAX_KEPT_CHECKPOINTS)]


@router.get("/{experiment_id}/preview_gc", responses=USER_AUTH_RESPONSES)
def preview_gc(
    experiment_id: ExperimentId,
    database: DatabaseDep,
    user: CurrentUser,
    save_experiment_best: Count,
    save_trial_best: Count,
    save_trial_latest: Count,
) -> list[CheckpointPublic]:
    """The experiment's completed checkpoints that this retention policy would delete (the
    latest checkpoint of each trial that may still run is kept); nothing changes."""
    with database.session() as session:
        config = stored_config(session, experiment_id)
    storage = config.checkpoint_storage.model_copy(
        update={
            "save_experiment_best": save_experiment_best,
            "save_trial_best": save_trial_best,
            "save_trial_latest": save_trial_latest,
        }
    )
    doomed = set(
        doomed_checkpoints(
            database, experiment_id, config.model_copy(update={"checkpoint_storage": storage})
        )
    )
    with database.session() as session:
        rows, _ = checkpoints_repo.list_checkpoints(
            session, experiment_id=experiment_id, limit=MAX_KEPT_CHECKPOINTS, offset=0
        )
        return [
            checkpoint_public(
                checkpoint,
                exp_id,
                metrics_repo.validation_metrics_at(
                    session, checkpoint.trial_id, checkpoint.total_batches
                ),
            )
            for checkpoint, exp_id in rows
            if checkpoint.uuid in doomed
        ]


class ExperimentContinue(BaseModel):
    """Body of ``POST /experiments/{id}/continue``: what to change in the experiment's
    config (YAML text or an object; merged over it, objects key by key)."""

    model_config = ConfigDict(extra="forbid")

    config: dict[str, Any] | Annotated[str, Field(max_length=MAX_OVERRIDE_CHARS)] = Field(
        default_factory=dict, description="The override config, e.g. a longer max_length."
    )


@router.post("/{experiment_id}/continue", responses=OWNER_RESPONSES)
def continue_experiment(
    experiment_id: ExperimentId,
    body: ExperimentContinue,
    database: DatabaseDep,
    user: CurrentUser,
    request: Request,
) -> ExperimentPublic:
    """Continue an ended experiment as ``det experiment continue`` does; it is ACTIVE until
    its searcher ends again, and every trial's restarts are back to 0.

    A single-trial experiment: its trial trains again from its latest checkpoint to the
    searcher's ``max_length`` of the config with ``config`` merged over it (a longer one
    trains further). A grid or random search (no ``config`` override): its searcher starts
    afresh with the same config and seed, so it asks for the same hyperparameters under the
    same request ids; a COMPLETED trial is not rerun (the searcher hears how it ended), an
    unfinished one (errored, canceled) trains again from its latest checkpoint as the same
    trial, and the trials it never created are created. 409 while it has not ended, or for
    a grid or random search that COMPLETED with every trial COMPLETED; 422 for another
    searcher, an override for a grid or random search, an override that changes the
    searcher's name, the hyperparameters, ``project`` or ``workspace``, a config that
    does not validate, or one whose trials this master could never start (as
    ``POST /experiments``). Its owner or an administrator only (403)."""
    settings = request.app.state.settings
    assert isinstance(settings, MasterSettings)
    override = _parsed(body.config)
    with database.session() as session:
        experiment = experiments_repo.get_experiment(session, experiment_id)
        require_owner(user, experiment.owner, f"experiment {experiment_id}")
        if not experiment.state.is_terminal:
            raise ApiError(
                409,
                f"experiment {experiment_id} is {experiment.state.value}: only an ended "
                "experiment can be continued (try again once it has ended)",
                field="state",
            )
        current = dict(experiment.config)
        completed = experiment.state.value == "COMPLETED" and all(
            t.state == TrialState.COMPLETED for t in trials_repo.all_trials(session, experiment_id)
        )
    name = str(current.get("searcher", {}).get("name"))
    if name not in _CONTINUABLE:
        raise ApiError(
            422,
            f"unsupported searcher type {name!r}: only experiments of the single, grid and "
            "random searchers can be continued",
            field="searcher.name",
        )
    single = name == "single"
    if not single and override:
        raise ApiError(
            422,
            f"override config is provided and experiment is not single searcher, got {name!r} "
            "instead",
            field="config",
        )
    if not single and completed:
        raise ApiError(409, "experiment has been completed, cannot continue this experiment")
    _refuse_keys(override)
    merged = _merged(current, override)
    merged_name = merged.get("searcher", {}).get("name")
    if single and merged_name != "single":
        raise ApiError(
            422,
            f"override config must have single searcher type, got {merged_name!r} instead",
            field="config.searcher.name",
        )
    validated = validate_experiment_config(
        merged,
        default_checkpoint_dir=settings.checkpoint_dir,
        storage_roots=settings.allowed_storage_roots,
    )
    refuse_unlaunchable(getattr(request.app.state, "orchestrator", None), validated.config)
    with database.session(write=True) as session:
        continued = continuation_repo.continue_experiment(
            session, experiment_id, config=validated.document, rerun_completed=single
        )
        return ExperimentPublic.model_validate(continued)


def _parsed(source: dict[str, Any] | str) -> dict[str, Any]:
    """The override config as a mapping; 422 for YAML that is not one."""
    if isinstance(source, str):
        try:
            loaded = load_value(source) if source.strip() else {}
        except yaml.YAMLError as err:
            raise ApiError(422, f"the override config is not YAML: {err}", field="config") from err
        if loaded is None:
            loaded = {}
        if not isinstance(loaded, Mapping):
            raise ApiError(422, "the override config must be a mapping", field="config")
        source = dict(loaded)
    return source


def _refuse_keys(override: Mapping[str, Any]) -> None:
    """422 for keys of the override config that cannot change when continuing."""
    for key, message in _REFUSED_KEYS.items():
        if key in override:
            raise ApiError(422, message, field=f"config.{key}")


def _merged(base: Mapping[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    """``override`` merged over ``base``: mappings key by key, anything else replaced."""
    merged = copy.deepcopy(dict(base))
    for key, value in override.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), Mapping):
            merged[key] = _merged(merged[key], value)
        else:
            merged[key] = copy.deepcopy(value)
    return merged
