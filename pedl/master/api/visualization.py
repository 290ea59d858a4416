"""``/api/v1/experiments/{id}/series``, ``.../trials/summary``, ``.../metric-names``: what the
experiment's charts draw, compact and bounded whatever the experiment's size.

Learning curves are downsampled here (:func:`~pedl.master.api._downsample.lttb`), for at
most ``max_trials`` trials (the best ones always among them), so an experiment of 10,000
trials of 100 validations each answers in one query for the chosen trials' rows (P6 in
bench/RESULTS.md). Each handler runs in one worker-thread hop holding one short read session.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Annotated, Any, Literal

import anyio.to_thread
from fastapi import APIRouter, Depends, Query, Request, Response

from pedl.engine import MetricKind
from pedl.master.api._auth import USER_AUTH_RESPONSES, require_user
from pedl.master.api._chart_cache import ChartCache
from pedl.master.api._deps import DatabaseDep, ExperimentId
from pedl.master.api._downsample import lttb
from pedl.master.api._errors import ERROR_RESPONSES, ApiError
from pedl.master.api._schemas import (
    MAX_BIGINT,
    MetricName,
    MetricNamesPublic,
    SeriesPublic,
    TrialsSummaryPublic,
)
from pedl.master.db import experiments as experiments_repo
from pedl.master.db import metrics as metrics_repo
from pedl.master.db import trials as trials_repo

router = APIRouter(
    prefix="/experiments",
    tags=["visualization"],
    responses={**ERROR_RESPONSES, **USER_AUTH_RESPONSES},
    dependencies=[require_user],
)

MAX_POINTS = 2_000
MAX_TRIALS = 1_000
BEST_MARKED = 5
"""The best trials (by the searcher metric) marked ``best`` and never left out."""


@router.get("/{experiment_id}/series", response_model=SeriesPublic)
async def get_series(
    experiment_id: ExperimentId,
    database: DatabaseDep,
    metric: Annotated[MetricName, Query(description="The metric to draw.")],
    kind: Annotated[MetricKind, Query(description="Training or validation rows.")] = (
        MetricKind.VALIDATION
    ),
    x: Annotated[
        Literal["batches", "epochs"],
        Query(description="`epochs` needs records_per_epoch and a global_batch_size."),
    ] = "batches",
    max_points: Annotated[int, Query(ge=2, le=MAX_POINTS, description="Per trial.")] = 200,
    max_trials: Annotated[int, Query(ge=1, le=MAX_TRIALS)] = 100,
    after: Annotated[
        int | None,
        Query(ge=0, le=MAX_BIGINT, description="A `cursor`: only the points stored since."),
    ] = None,
) -> Response:
    """Learning curves of ``metric``: one line per trial, each cut to at most
    ``max_points`` by largest-triangle-three-buckets (first and last points kept).

    At most ``max_trials`` trials: the best 5 by the searcher metric (``best: true``) and
    the rest spread evenly over the trials that have such rows, by id; trials without a point
    of ``metric`` are left out. ``x=epochs`` converts batches with the config's
    ``records_per_epoch`` and each trial's ``global_batch_size`` (422 naming ``x`` when they
    are missing). ``cursor`` is the largest metric row id read; ``after=<cursor>`` answers
    only points stored since, for the trials chosen now (points cut the same way past
    ``max_points``).
    """

    def read() -> bytes:
        with database.session() as session:
            experiment = experiments_repo.get_experiment(session, experiment_id)
            best, candidates = trials_repo.series_candidates(
                session,
                experiment_id,
                trained=kind == MetricKind.TRAINING,
                smaller_is_better=experiment.smaller_is_better,
                best=BEST_MARKED,
            )
            chosen = choose_trials(best, candidates, max_trials)
            scale: dict[int, float] = {}
            if x == "epochs":
                hparams = trials_repo.trial_hparams(session, list(chosen))
                scale = epochs_per_batch(experiment.config, hparams)
            lines = metrics_repo.series(session, list(chosen), kind, metric, after_row=after)
            cursor = metrics_repo.last_row_id(session, list(chosen), kind, after_row=after)
        head = json.dumps(
            {"kind": kind.value, "metric": metric, "x": x, "cursor": cursor or after or 0},
            separators=(",", ":"),
        )
        parts = [
            f'{{"trial_id":{line.trial_id},"best":{"true" if chosen[line.trial_id] else "false"},'
            f'"points":{_points(line.points, scale.get(line.trial_id), max_points)}}}'
            for line in lines
        ]
        return f'{head[:-1]},"trials":[{",".join(parts)}]}}'.encode()

    return Response(await anyio.to_thread.run_sync(read), media_type="application/json")


def choose_trials(
    best: Sequence[int], candidates: Sequence[int], max_trials: int
) -> dict[int, bool]:
    """The trials to draw, ``{trial id: best}`` in id order: the first
    ``min(BEST_MARKED, max_trials)`` of ``best`` (trial ids, best first), then the other
    ``candidates`` (ids in order) spread evenly, ``max_trials`` in all."""
    top = set(best[: min(BEST_MARKED, max_trials)])
    rest = [trial_id for trial_id in candidates if trial_id not in top]
    room = max_trials - len(top)
    if len(rest) > room:
        rest = [rest[(i * len(rest)) // room] for i in range(room)] if room > 0 else []
    chosen = dict.fromkeys(top, True)
    chosen.update(dict.fromkeys(rest, False))
    return dict(sorted(chosen.items()))


def epochs_per_batch(
    config: dict[str, Any], hparams: dict[int, dict[str, Any]]
) -> dict[int, float]:
    """Per trial, the epochs one batch is (``global_batch_size / records_per_epoch``); raises
    :class:`ApiError` 422 naming ``x`` when the config or a trial cannot say."""
    records = config.get("records_per_epoch")
    if not isinstance(records, int | float) or isinstance(records, bool) or records <= 0:
        raise ApiError(
            422,
            "x=epochs needs records_per_epoch in the experiment's config; use x=batches",
            field="x",
        )
    scale = {}
    for trial_id, values in hparams.items():
        size = values.get("global_batch_size")
        if not isinstance(size, int | float) or isinstance(size, bool) or size <= 0:
            raise ApiError(
                422,
                f"x=epochs needs the global_batch_size hyperparameter (trial {trial_id} has "
                "none); use x=batches",
                field="x",
            )
        scale[trial_id] = float(size) / float(records)
    return scale


def _points(points: str, scale: float | None, max_points: int) -> str:
    """A trial's ``[[batches, value], ...]`` JSON as the answer has it: as the database wrote
    it, unless it is longer than ``max_points`` (cut with :func:`lttb`) or x is in epochs."""
    if scale is None and points.count("[") - 1 <= max_points:  # one "[" per pair, numbers only
        return points
    pairs = json.loads(points)
    if scale is not None:
        pairs = [[batches * scale, value] for batches, value in pairs]
    return json.dumps(lttb(pairs, max_points), separators=(",", ":"))


async def get_chart_cache(request: Request) -> ChartCache:
    """The app's :class:`ChartCache`, made on first use (on the event loop: no race)."""
    cache = getattr(request.app.state, "chart_cache", None)
    if not isinstance(cache, ChartCache):
        cache = request.app.state.chart_cache = ChartCache()
    return cache


ChartCacheDep = Annotated[ChartCache, Depends(get_chart_cache)]


@router.get("/{experiment_id}/trials/summary", response_model=TrialsSummaryPublic)
async def get_trials_summary(
    experiment_id: ExperimentId, database: DatabaseDep, cache: ChartCacheDep
) -> Response:
    """Every trial of the experiment, as columns (for parallel coordinates and scatter
    plots): ids, states, best searcher-metric values and one column per hyperparameter
    (nested ones flattened with dots, values as stored, null where a trial has none).

    The hyperparameter columns are kept between requests (they never change); each request
    reads only the trials' states and best values, and the hyperparameters of new trials."""

    def read() -> bytes:
        with database.session() as session:
            experiment = experiments_repo.get_experiment(session, experiment_id)
            rows = trials_repo.trial_rows(session, experiment_id)
            ids = [row[0] for row in rows]

            def read_after(last_id: int) -> list[tuple[int, dict[str, Any]]]:
                added = trials_repo.trial_hparams_after(session, experiment_id, last_id)
                return [row for row in added if row[0] <= ids[-1]]

            columns = cache.hparam_columns((experiment_id, experiment.created_at), ids, read_after)
            hparams = columns.json()
        best = [row[2] if row[2] is not None and math.isfinite(row[2]) else None for row in rows]
        head = json.dumps(
            {"trial_ids": ids, "states": [row[1] for row in rows], "best_validation": best},
            separators=(",", ":"),
        ).encode()
        return head[:-1] + b',"hparams":' + hparams + b"}"

    return Response(await anyio.to_thread.run_sync(read), media_type="application/json")


@router.get("/{experiment_id}/metric-names")
async def get_metric_names(
    experiment_id: ExperimentId, database: DatabaseDep, cache: ChartCacheDep
) -> MetricNamesPublic:
    """The names of the metrics the experiment's trials report, per kind, sorted (those in
    each trial's first and latest row of the kind; kept once the experiment has ended)."""

    def read() -> MetricNamesPublic:
        with database.session() as session:
            experiment = experiments_repo.get_experiment(session, experiment_id)

            def names() -> dict[str, list[str]]:
                found = metrics_repo.metric_names(session, experiment_id)
                return {kind.value: found[kind] for kind in MetricKind}

            found = cache.metric_names(
                (experiment_id, experiment.created_at), experiment.state.is_terminal, names
            )
        return MetricNamesPublic(
            training=found[MetricKind.TRAINING.value],
            validation=found[MetricKind.VALIDATION.value],
        )

    return await anyio.to_thread.run_sync(read)
