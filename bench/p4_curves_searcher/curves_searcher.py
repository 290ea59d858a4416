"""A custom search method for ``bench/p4_curves.py``: random search's 27 draws (the
``random`` searcher itself, built from the same seed, so the same hyperparameters and
trial seeds as ``bench/p4_asha.py``'s searches), each trained to ``max_length`` with a
validation after every whole epoch, at exactly the batch counts a rung of that length
reaches."""

from __future__ import annotations

import uuid

from pedl.config import ExperimentConfig
from pedl.searcher import (
    ExitedReason,
    Operation,
    SearcherState,
    SearchMethod,
    ValidateAfter,
    make_search_method,
)


class EveryEpoch(SearchMethod):
    def __init__(self, config: ExperimentConfig) -> None:
        data = config.model_dump(mode="json", exclude_none=True)
        length = config.searcher.max_length
        assert length is not None and length.unit == "epochs"
        self._epochs = length.value
        data["searcher"] = {
            "name": "random",
            "metric": config.searcher.metric,
            "smaller_is_better": config.searcher.smaller_is_better,
            "max_length": {"epochs": self._epochs},
            "max_trials": 27,
            "max_concurrent_trials": 2,
        }
        self._inner = make_search_method(ExperimentConfig.model_validate(data))

    def _expand(self, ops: list[Operation]) -> list[Operation]:
        out: list[Operation] = []
        for op in ops:
            if isinstance(op, ValidateAfter):
                out += [ValidateAfter(op.request_id, n) for n in range(1, op.length + 1)]
            else:
                out.append(op)
        return out

    def initial_operations(self, s: SearcherState) -> list[Operation]:
        return self._expand(self._inner.initial_operations(s))

    def on_trial_created(self, s: SearcherState, request_id: uuid.UUID) -> list[Operation]:
        return self._expand(self._inner.on_trial_created(s, request_id))

    def on_validation_completed(
        self, s: SearcherState, request_id: uuid.UUID, metric: float, train_length: int
    ) -> list[Operation]:
        if train_length < self._epochs:
            return []
        return self._expand(
            self._inner.on_validation_completed(s, request_id, metric, train_length)
        )

    def on_trial_closed(self, s: SearcherState, request_id: uuid.UUID) -> list[Operation]:
        return self._expand(self._inner.on_trial_closed(s, request_id))

    def on_trial_exited_early(
        self, s: SearcherState, request_id: uuid.UUID, exited_reason: ExitedReason
    ) -> list[Operation]:
        return self._expand(self._inner.on_trial_exited_early(s, request_id, exited_reason))

    def progress(self, s: SearcherState) -> float:
        return self._inner.progress(s)
