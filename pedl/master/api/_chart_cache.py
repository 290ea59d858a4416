"""What the experiment charts read that does not change, kept between requests.

A trial's hyperparameters never change once it is created, and an ended experiment's metric
names do not either, so the master keeps them (for the few experiments looked at lately)
instead of decoding 10,000 JSON documents on every page load and every poll (P6 in
bench/RESULTS.md). Thread-safe: the handlers run on worker threads.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

MAX_EXPERIMENTS = 8


def flatten(hparams: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested hyperparameters as one level, names joined with dots."""
    flat: dict[str, Any] = {}
    for name, value in hparams.items():
        if isinstance(value, dict):
            flat.update(flatten(value, f"{prefix}{name}."))
        else:
            flat[f"{prefix}{name}"] = value
    return flat


class HparamColumns:
    """One experiment's trials' hyperparameters as columns (one list per flattened name, in
    trial id order, ``None`` where a trial has none), and their JSON text."""

    def __init__(self) -> None:
        self.trial_ids: list[int] = []
        self.columns: dict[str, list[Any]] = {}
        self._json: bytes | None = b"{}"

    @property
    def last_id(self) -> int:
        return self.trial_ids[-1] if self.trial_ids else 0

    def extend(self, rows: Sequence[tuple[int, dict[str, Any]]]) -> None:
        """Append trials (ids above :attr:`last_id`, in order)."""
        if not rows:
            return
        start = len(self.trial_ids)
        total = start + len(rows)
        for column in self.columns.values():
            column.extend([None] * len(rows))
        for offset, (trial_id, hparams) in enumerate(rows):
            self.trial_ids.append(trial_id)
            for name, value in flatten(hparams).items():
                if name not in self.columns:
                    self.columns[name] = [None] * total
                self.columns[name][start + offset] = value
        self._json = None

    def matches(self, trial_ids: Sequence[int]) -> bool:
        """Whether these columns are of the first trials of ``trial_ids`` (the same ids)."""
        count = len(self.trial_ids)
        return count <= len(trial_ids) and (count == 0 or trial_ids[count - 1] == self.last_id)

    def json(self) -> bytes:
        if self._json is None:
            self._json = json.dumps(self.columns, separators=(",", ":")).encode()
        return self._json


class ChartCache:
    """Per experiment (the :data:`MAX_EXPERIMENTS` used last): its :class:`HparamColumns`, and
    its metric names once it has ended. An experiment is known by its id and creation time, so
    a new experiment that reuses a deleted one's id starts afresh."""

    def __init__(self, max_experiments: int = MAX_EXPERIMENTS) -> None:
        self._max = max_experiments
        self._lock = threading.Lock()
        self._hparams: OrderedDict[tuple[int, datetime], HparamColumns] = OrderedDict()
        self._names: OrderedDict[tuple[int, datetime], dict[str, list[str]]] = OrderedDict()

    def hparam_columns(
        self,
        experiment: tuple[int, datetime],
        trial_ids: Sequence[int],
        read_after: Callable[[int], Sequence[tuple[int, dict[str, Any]]]],
    ) -> HparamColumns:
        """The hyperparameter columns of exactly the trials ``trial_ids`` (all of the
        experiment's, by id); ``read_after(last_id)`` reads those above the ones kept."""
        with self._lock:
            columns = self._hparams.pop(experiment, None)
            if columns is None or not columns.matches(trial_ids):
                columns = HparamColumns()
            if len(columns.trial_ids) < len(trial_ids):
                columns.extend(read_after(columns.last_id))
            self._hparams[experiment] = columns
            while len(self._hparams) > self._max:
                self._hparams.popitem(last=False)
            return columns

    def metric_names(
        self,
        experiment: tuple[int, datetime],
        ended: bool,
        read: Callable[[], dict[str, list[str]]],
    ) -> dict[str, list[str]]:
        """The experiment's metric names: ``read()`` unless it has ended and they are kept."""
        with self._lock:
            names = self._names.get(experiment)
            if names is not None:
                self._names.move_to_end(experiment)
                return names
        names = read()
        if ended:
            with self._lock:
                self._names[experiment] = names
                while len(self._names) > self._max:
                    self._names.popitem(last=False)
        return names
