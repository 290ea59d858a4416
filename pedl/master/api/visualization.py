"""``/api/v1/experiments/{id}/series``, ``.../trials/summary``, ``.../metric-names``,
``.../importance``, ``.../history``, ``.../timeline``: what the experiment's charts draw,
compact and bounded whatever the experiment's size.

Learning curves are downsampled here (:func:`~pedl.master.api._downsample.lttb`), for at
most ``max_trials`` trials (the best ones always among them), so an experiment of 10,000
trials of 100 validations each answers in one query for the chosen trials' rows (P6 in
bench/RESULTS.md). Each handler runs in one worker-thread hop holding one short read session.
"""

from __future__ import annotations

import json
import math
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Annotated, Any, Literal

import anyio.to_thread
from fastapi import APIRouter, Depends, Query, Request, Response
from pydantic import BaseModel
from sqlalchemy.orm import Session

from pedl.db import Experiment, search_history
from pedl.db import experiments as experiments_repo
from pedl.db import metrics as metrics_repo
from pedl.db import trials as trials_repo
from pedl.master.api._auth import USER_AUTH_RESPONSES, require_user
from pedl.master.api._chart_cache import ChartCache
from pedl.master.api._deps import DatabaseDep, ExperimentId
from pedl.master.api._downsample import lttb
from pedl.master.api._errors import ERROR_RESPONSES, ApiError
from pedl.master.api._importance import (
    METHOD,
    Importance,
    ImportanceCache,
    ImportanceUnavailableError,
    compute_importance,
)
from pedl.master.api._schemas import (
    MAX_BIGINT,
    HistoryPublic,
    HparamImportancePublic,
    ImportancePublic,
    MetricName,
    MetricNamesPublic,
    SeriesPublic,
    TimelinePublic,
    TrialsSummaryPublic,
)
from pedl.master.api._timeline import Span, assign_slots
from pedl.vocabulary import MetricKind

router = APIRouter(
    prefix="/experiments",
    tags=["visualization"],
    responses={**ERROR_RESPONSES, **USER_AUTH_RESPONSES},
    dependencies=[require_user],
)

MAX_POINTS = 2_000
MAX_TRIALS = 1_000
MAX_PICKED = 100
"""At most this many ``trial_id`` with ``select=ids``."""
MAX_ALL_TRIALS = 100_000
ALL_POINTS = 200_000
"""With ``select=all``: the points of all lines together at most (each line cut to its share,
2 at least)."""
SERIES_CHUNK = 1_000
"""The trials whose lines one query reads."""
BEST_KEPT = 5
"""The best trials (by the searcher metric) never left out of the default choice."""

Select = Literal["default", "best", "worst", "all", "ids"]


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
        Query(
            description="`epochs`: each row's stored epochs; rows without need "
            "records_per_epoch and a global_batch_size."
        ),
    ] = "batches",
    max_points: Annotated[int, Query(ge=2, le=MAX_POINTS, description="Per trial.")] = 200,
    max_trials: Annotated[int, Query(ge=1, le=MAX_TRIALS)] = 100,
    after: Annotated[
        int | None,
        Query(ge=0, le=MAX_BIGINT, description="A `cursor`: only the points stored since."),
    ] = None,
    select: Annotated[
        Select,
        Query(
            description="Which trials: `default` (the 5 best and the rest spread evenly), "
            "`best` or `worst` (the `max_trials` best or worst by the searcher metric), `all` "
            "(every trial; each line cut to its share of 200,000 points), `ids` (`trial_id`)."
        ),
    ] = "default",
    trial_id: Annotated[
        list[Annotated[int, Query(ge=1, le=MAX_BIGINT)]] | None,
        Query(max_length=MAX_PICKED, description="With `select=ids`: the trials (100 at most)."),
    ] = None,
) -> Response:
    """Learning curves of ``metric``: one line per trial, each cut to at most
    ``max_points`` by largest-triangle-three-buckets (first and last points kept).

    At most ``max_trials`` trials, chosen by ``select``: by default the best 5 by the searcher
    metric and the rest spread evenly over the trials that have such rows, by id; trials
    without a point of ``metric`` are left out. ``best: true`` marks the one best trial of the
    experiment only. ``total_trials`` says how many trials have rows of ``kind``.
    ``x=epochs`` places each point at the epochs its metric row stored (``total_epochs``,
    as the trial counted them: a script's ``fit`` epochs, over several ``fit`` calls too);
    rows that stored none are converted from batches with the config's
    ``records_per_epoch`` and the trial's ``global_batch_size`` (422 naming ``x`` when those
    are missing). ``cursor`` is the largest
    metric row id read; ``after=<cursor>`` answers only points stored since, for the trials
    chosen now (points cut the same way past ``max_points``).
    """

    if select == "ids" and not trial_id:
        raise ApiError(422, "select=ids needs at least one trial_id", field="trial_id")
    if trial_id and select != "ids":
        raise ApiError(422, "trial_id is for select=ids only", field="trial_id")

    def read() -> bytes:
        with database.session() as session:
            experiment = experiments_repo.get_experiment(session, experiment_id)
            if after is not None:
                return build(session, experiment)
            chart = ("series", metric, kind, x, max_points, max_trials, select)
            picked = tuple(sorted(set(trial_id or [])))
            return _kept_if_ended((*chart, picked), experiment, lambda: build(session, experiment))

    def build(session: Session, experiment: Experiment) -> bytes:
        best, candidates = trials_repo.series_candidates(
            session,
            experiment_id,
            trained=kind == MetricKind.TRAINING,
            smaller_is_better=experiment.smaller_is_better,
            best=BEST_KEPT,
        )
        top = best[0] if best else None
        per_line = max_points
        if select == "default":
            chosen = choose_trials(best, candidates, max_trials)
        elif select == "all":
            chosen = dict.fromkeys(candidates[:MAX_ALL_TRIALS], False)
            per_line = max(2, min(max_points, ALL_POINTS // max(1, len(chosen))))
        elif select == "ids":
            known = set(candidates)
            chosen = {t: False for t in sorted(set(trial_id or [])) if t in known}
        else:
            ranked = trials_repo.ranked_trial_ids(
                session,
                experiment_id,
                best_first=(select == "best"),
                smaller_is_better=experiment.smaller_is_better,
                limit=max_trials,
            )
            chosen = {t: False for t in sorted(ranked)}
        if top is not None and top in chosen:
            chosen[top] = True
        epochs = x == "epochs"
        ids = list(chosen)
        parts = []
        cursor: int | None = None
        # A thousand trials' lines at a time, each cut as it comes (select=all of 100,000
        # trials: 10 million points, 270 MB of the master's memory when read at once; and
        # PostgreSQL takes 65,535 parameters at most).
        for start in range(0, len(ids), SERIES_CHUNK):
            chunk = ids[start : start + SERIES_CHUNK]
            lines = metrics_repo.series(
                session, chunk, kind, metric, after_row=after, epochs=epochs
            )
            scale: dict[int, float] = {}
            if epochs:  # the trials with rows that stored no epochs: converted from batches
                lacking = [line.trial_id for line in lines if _lacks_epochs(line.points)]
                if lacking:
                    hparams = trials_repo.trial_hparams(session, lacking)
                    scale = epochs_per_batch(experiment.config, hparams)
            for line in lines:
                marked = "true" if chosen[line.trial_id] else "false"
                points = _points(line.points, scale.get(line.trial_id), per_line, epochs=epochs)
                parts.append(f'{{"trial_id":{line.trial_id},"best":{marked},"points":{points}}}')
            last = metrics_repo.last_row_id(session, chunk, kind, after_row=after)
            cursor = max((c for c in (cursor, last) if c is not None), default=None)
        head = json.dumps(
            {
                "kind": kind.value,
                "metric": metric,
                "x": x,
                "cursor": cursor or after or 0,
                "select": select,
                "total_trials": len(candidates),
            },
            separators=(",", ":"),
        )
        return f'{head[:-1]},"trials":[{",".join(parts)}]}}'.encode()

    return Response(await anyio.to_thread.run_sync(read), media_type="application/json")


def choose_trials(
    best: Sequence[int], candidates: Sequence[int], max_trials: int
) -> dict[int, bool]:
    """The trials to draw, ``{trial id: False}`` in id order (the caller marks the best): the
    first ``min(BEST_KEPT, max_trials)`` of ``best`` (trial ids, best first), then the other
    ``candidates`` (ids in order) spread evenly, ``max_trials`` in all."""
    top = set(best[: min(BEST_KEPT, max_trials)])
    rest = [trial_id for trial_id in candidates if trial_id not in top]
    room = max_trials - len(top)
    if len(rest) > room:
        rest = [rest[(i * len(rest)) // room] for i in range(room)] if room > 0 else []
    return dict.fromkeys(sorted([*top, *rest]), False)


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


def _lacks_epochs(points: str) -> bool:
    """Whether a trial's ``[[batches, value, epochs], ...]`` JSON has a point whose row
    stored no epochs (a ``null`` epochs; values are finite numbers, never null)."""
    return "null" in points


def _points(points: str, scale: float | None, max_points: int, *, epochs: bool = False) -> str:
    """A trial's ``[[batches, value], ...]`` JSON as the answer has it: as the database wrote
    it, unless it is longer than ``max_points`` (cut with :func:`lttb`) or x is in epochs.
    In epochs (``points`` holding ``[batches, value, epochs]``), x is each row's stored
    ``total_epochs``, else its batches times ``scale`` (epochs per batch)."""
    if not epochs and points.count("[") - 1 <= max_points:  # one "[" per pair, numbers only
        return points
    pairs = json.loads(points)
    if epochs:
        pairs = [
            [stored if stored is not None else batches * (scale or 0.0), value]
            for batches, value, stored in pairs
        ]
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
            return _kept_if_ended(("summary",), experiment, lambda: build(session, experiment))

    def build(session: Session, experiment: Experiment) -> bytes:
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


async def get_importance_cache(request: Request) -> ImportanceCache:
    """The app's :class:`ImportanceCache`, made on first use (on the event loop: no race)."""
    cache = getattr(request.app.state, "importance_cache", None)
    if not isinstance(cache, ImportanceCache):
        cache = request.app.state.importance_cache = ImportanceCache()
    return cache


ImportanceCacheDep = Annotated[ImportanceCache, Depends(get_importance_cache)]


def log_scaled(hyperparameters: object, prefix: str = "") -> frozenset[str]:
    """The flattened names of the config's ``type: log`` hyperparameters."""
    if not isinstance(hyperparameters, dict):
        return frozenset()
    found: set[str] = set()
    for name, spec in hyperparameters.items():
        if isinstance(spec, dict) and isinstance(spec.get("type"), str):
            if spec["type"] == "log":
                found.add(f"{prefix}{name}")
        elif isinstance(spec, dict):
            found |= log_scaled(spec, f"{prefix}{name}.")
    return frozenset(found)


@router.get("/{experiment_id}/importance", response_model=ImportancePublic)
async def get_importance(
    experiment_id: ExperimentId,
    database: DatabaseDep,
    cache: ChartCacheDep,
    importance_cache: ImportanceCacheDep,
) -> Response:
    """How much each hyperparameter decides the searcher metric: Optuna's PED-ANOVA over
    the trials with a searcher-metric value (which hyperparameters' values differ most
    between the best 10% and all of them), shares summing to 1. Computed in the background
    and kept per experiment: ``ready`` is false until the first is computed (ask again),
    ``current`` false while the one answered is of older values (computed again when the
    trials' values change, at most every 10 s; ``trials`` says how many it used). 503 when
    the master has no Optuna (``pip install 'pedl[bayes]'``). An ended experiment's, once
    computed, is kept with its other charts."""

    def read() -> bytes:
        with database.session() as session:
            experiment = experiments_repo.get_experiment(session, experiment_id)
            ended = _ended_key(("importance",), experiment)
            found_before = _kept(ended)
            if found_before is not None:
                return found_before
            rows = trials_repo.trial_rows(session, experiment_id)
            ids = [row[0] for row in rows]

            def read_after(last_id: int) -> list[tuple[int, dict[str, Any]]]:
                added = trials_repo.trial_hparams_after(session, experiment_id, last_id)
                return [row for row in added if ids and row[0] <= ids[-1]]

            key_of = (experiment_id, experiment.created_at)
            columns = dict(cache.hparam_columns(key_of, ids, read_after).columns)
            smaller = experiment.smaller_is_better
            logs = log_scaled(experiment.config.get("hyperparameters"))
            metric = experiment.searcher_metric
        values = [row[2] for row in rows]

        def compute() -> Importance:
            return compute_importance(columns, values, smaller_is_better=smaller, log_scale=logs)

        try:
            found, current = importance_cache.get(key_of, (len(ids), hash(tuple(values))), compute)
        except ImportanceUnavailableError as err:
            raise ApiError(503, str(err)) from err
        answer = _json(
            ImportancePublic(
                metric=metric,
                method=METHOD,
                ready=found is not None,
                current=current,
                trials=found.trials if found else 0,
                importances=[
                    HparamImportancePublic(name=name, importance=value)
                    for name, value in (found.importances if found else [])
                ],
            )
        )
        return _keep(ended, answer) if found is not None and current else answer

    return Response(await anyio.to_thread.run_sync(read), media_type="application/json")


ENDED_BYTES = 64 * 2**20
"""The answers kept for ended experiments' charts: this many bytes of JSON at most."""
_ended_lock = threading.Lock()
_ended: OrderedDict[tuple[Any, ...], bytes] = OrderedDict()
_ended_size = 0


def _ended_key(chart: tuple[Any, ...], experiment: Experiment) -> tuple[Any, ...] | None:
    """The key of an ended experiment's chart answer: the chart and its parameters, the
    experiment's id, creation and end (a continued experiment ends again later: its answers
    are made again); ``None`` while the experiment has not ended."""
    if not experiment.state.is_terminal:
        return None
    return (*chart, experiment.id, experiment.created_at, experiment.ended_at)


def _kept(key: tuple[Any, ...] | None) -> bytes | None:
    if key is None:
        return None
    with _ended_lock:
        found = _ended.get(key)
        if found is not None:
            _ended.move_to_end(key)
        return found


def _keep(key: tuple[Any, ...] | None, answer: bytes) -> bytes:
    """``answer``, kept under ``key`` (unless ``None``) with the most recently used others
    that fit in :data:`ENDED_BYTES`."""
    global _ended_size
    if key is None or len(answer) > ENDED_BYTES // 4:
        return answer
    with _ended_lock:
        if key not in _ended:
            _ended[key] = answer
            _ended_size += len(answer)
            while _ended_size > ENDED_BYTES:
                _, dropped = _ended.popitem(last=False)
                _ended_size -= len(dropped)
    return answer


def _kept_if_ended(
    chart: tuple[Any, ...], experiment: Experiment, read: Callable[[], bytes]
) -> bytes:
    """``read()``, kept once the experiment has ended (an ended experiment's charts never
    change: P6 in bench/RESULTS.md, 100,000 trials, reads and encodes them once)."""
    key = _ended_key(chart, experiment)
    found = _kept(key)
    return found if found is not None else _keep(key, read())


def _json(model: BaseModel) -> bytes:
    return model.model_dump_json().encode()


def _seconds(moment: datetime, start: datetime) -> float:
    return round((moment - start).total_seconds(), 3)


@router.get("/{experiment_id}/history", response_model=HistoryPublic)
async def get_history(experiment_id: ExperimentId, database: DatabaseDep) -> Response:
    """The optimization history: each trial with a searcher-metric value, in the order the
    trials ended (running ones last, at the time of the answer), with its best value and
    the best of it and every earlier one."""

    def read() -> bytes:
        with database.session() as session:
            experiment = experiments_repo.get_experiment(session, experiment_id)
            return _kept_if_ended(
                ("history",), experiment, lambda: _json(build(session, experiment))
            )

    def build(session: Session, experiment: Experiment) -> HistoryPublic:
        rows = search_history.trial_outcomes(session, experiment_id)
        now = datetime.now(UTC)
        start = experiment.created_at
        entries = sorted(
            (
                (_seconds(row.ended_at or now, start), row.ended_at is not None, row)
                for row in rows
                if row.best_validation is not None and math.isfinite(row.best_validation)
            ),
            key=lambda entry: (not entry[1], entry[0], entry[2].trial_id),
        )
        smaller = experiment.smaller_is_better
        best_so_far: list[float] = []
        for _, _, row in entries:
            value = float(row.best_validation or 0.0)
            if best_so_far:
                previous = best_so_far[-1]
                value = min(previous, value) if smaller else max(previous, value)
            best_so_far.append(value)
        return HistoryPublic(
            metric=experiment.searcher_metric,
            smaller_is_better=smaller,
            started_at=start,
            trial_ids=[entry[2].trial_id for entry in entries],
            times=[entry[0] for entry in entries],
            ended=[entry[1] for entry in entries],
            values=[float(entry[2].best_validation or 0.0) for entry in entries],
            best_so_far=best_so_far,
        )

    return Response(await anyio.to_thread.run_sync(read), media_type="application/json")


@router.get("/{experiment_id}/timeline", response_model=TimelinePublic)
async def get_timeline(experiment_id: ExperimentId, database: DatabaseDep) -> Response:
    """When each attempt of each trial ran, from the master's lines in the trials' logs
    (``starting the trial process``, ``the trial process exited``), placed on slots numbered
    in start order so that attempts running at once never share one."""

    def read() -> bytes:
        with database.session() as session:
            experiment = experiments_repo.get_experiment(session, experiment_id)
            return _kept_if_ended(
                ("timeline",), experiment, lambda: _json(build(session, experiment))
            )

    def build(session: Session, experiment: Experiment) -> TimelinePublic:
        spans = search_history.attempt_spans(session, experiment_id)
        states = {
            row.trial_id: row.state for row in search_history.trial_outcomes(session, experiment_id)
        }
        start = experiment.created_at
        now = datetime.now(UTC)
        resources = experiment.config.get("resources")
        width = resources.get("slots_per_trial") if isinstance(resources, dict) else None
        width = width if isinstance(width, int) and width >= 1 else 1
        starts = [_seconds(span.started_at, start) for span in spans]
        ends = [None if span.ended_at is None else _seconds(span.ended_at, start) for span in spans]
        slot = assign_slots([Span(s, e) for s, e in zip(starts, ends, strict=True)], width)
        return TimelinePublic(
            started_at=start,
            now=_seconds(now, start),
            slots=max(slot, default=-width) + width,
            slots_per_trial=width,
            trial_ids=[span.trial_id for span in spans],
            states=[states[span.trial_id] for span in spans],
            starts=starts,
            ends=ends,
            slot=slot,
        )

    return Response(await anyio.to_thread.run_sync(read), media_type="application/json")
