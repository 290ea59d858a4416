"""The chart cache: hyperparameter columns grown with new trials, started afresh for another
experiment with the same id, few experiments kept; metric names kept once ended."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from pedl.master.api._chart_cache import ChartCache, HparamColumns, flatten

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def test_flatten() -> None:
    assert flatten({"a": 1, "b": {"c": 2, "d": {"e": "x"}}, "f": [1]}) == {
        "a": 1,
        "b.c": 2,
        "b.d.e": "x",
        "f": [1],
    }


def test_columns_grow() -> None:
    columns = HparamColumns()
    assert columns.json() == b"{}" and columns.last_id == 0
    columns.extend([(3, {"lr": 0.1}), (5, {"lr": 0.2, "n": {"u": 4}})])
    columns.extend([(9, {"m": True})])
    assert columns.trial_ids == [3, 5, 9] and columns.last_id == 9
    assert columns.columns == {
        "lr": [0.1, 0.2, None],
        "n.u": [None, 4, None],
        "m": [None, None, True],
    }
    assert columns.json() == b'{"lr":[0.1,0.2,null],"n.u":[null,4,null],"m":[null,null,true]}'
    assert (
        columns.matches([3, 5, 9, 10])
        and not columns.matches([3, 5])
        and not columns.matches([1, 2, 4])
    )


def test_cache_reads_only_new_trials() -> None:
    cache = ChartCache()
    reads: list[int] = []
    stored = [(1, {"lr": 0.1}), (2, {"lr": 0.2}), (4, {"lr": 0.4})]

    def read_after(last_id: int) -> list[tuple[int, dict[str, Any]]]:
        reads.append(last_id)
        return [row for row in stored if row[0] > last_id]

    experiment = (7, T0)
    assert cache.hparam_columns(experiment, [1, 2, 4], read_after).columns == {
        "lr": [0.1, 0.2, 0.4]
    }
    assert cache.hparam_columns(experiment, [1, 2, 4], read_after).trial_ids == [1, 2, 4]
    stored.append((8, {"lr": 0.8}))
    assert cache.hparam_columns(experiment, [1, 2, 4, 8], read_after).columns["lr"][-1] == 0.8
    assert reads == [0, 4]  # the second call read nothing
    # The same id, another experiment (the first was deleted): read afresh.
    stored[:] = [(9, {"units": 3})]
    other = cache.hparam_columns((7, T0 + timedelta(days=1)), [9], read_after)
    assert other.columns == {"units": [3]} and reads[-1] == 0


def test_cache_keeps_few_experiments() -> None:
    cache = ChartCache(max_experiments=2)
    reads: list[int] = []

    def read_after(last_id: int) -> list[tuple[int, dict[str, Any]]]:
        reads.append(last_id)
        return [(1, {"x": 1})]

    for experiment_id in (1, 2, 1, 3, 1):
        cache.hparam_columns((experiment_id, T0), [1], read_after)
    assert len(reads) == 3  # 1, 2, 3 read once each; 1 was kept as the most recently used


def test_metric_names_kept_once_ended() -> None:
    cache = ChartCache()
    calls = []

    def read() -> dict[str, list[str]]:
        calls.append(1)
        return {"training": ["loss"], "validation": []}

    cache.metric_names((1, T0), False, read)
    cache.metric_names((1, T0), False, read)
    assert len(calls) == 2  # a live experiment: read every time
    cache.metric_names((1, T0), True, read)
    assert cache.metric_names((1, T0), True, read) == {"training": ["loss"], "validation": []}
    assert len(calls) == 3
