"""A random search written the way Determined's custom searcher examples are: only the import
says ``pedl`` instead of ``determined``.

``MAX_TRIALS`` trials with random learning rates, two at a time, each validated at 10 and 20
batches, then closed; ``Shutdown`` once every trial is closed. Randomness comes from a seeded
``random.Random``, so replaying the events after a master restart gives the same trials.
Each trial's hyperparameters record the searcher's process id (``searcher_pid``), so the
tests can tell where the search ran, and which of the master's own settings variables the
searcher's environment holds (``searcher_saw``: none, it gets a trial's environment).
``FailingSearch`` raises in ``on_validation_completed``.
"""

import logging
import os
import random
import uuid

from pedl import searcher  # Determined: from determined import searcher

MAX_TRIALS = 3
MAX_CONCURRENT_TRIALS = 2
LENGTHS = (10, 20)
MASTER_VARIABLES = {"PEDL_HOME", "PEDL_HOST", "PEDL_PORT", "PEDL_CPU_SLOTS", "PEDL_DB_URL"}
"""Settings variables of the test masters (tests/master/e2e.py sets the first four)."""


class RandomSearchMethod(searcher.SearchMethod):
    def __init__(self) -> None:
        self.rng = random.Random(1234)
        self.created = 0
        self.closed: set[uuid.UUID] = set()
        self.next_length: dict[uuid.UUID, int] = {}

    def _create(self) -> list[searcher.Operation]:
        self.created += 1
        create = searcher.Create(
            request_id=uuid.uuid4(),
            hparams={
                "global_batch_size": 16,
                "lr": round(self.rng.uniform(0.001, 0.05), 6),
                "searcher_pid": os.getpid(),
                "searcher_saw": ",".join(sorted(MASTER_VARIABLES & set(os.environ))),
            },
            checkpoint=None,
        )
        self.next_length[create.request_id] = 0
        return [create, searcher.ValidateAfter(request_id=create.request_id, length=LENGTHS[0])]

    def initial_operations(
        self, searcher_state: searcher.SearcherState
    ) -> list[searcher.Operation]:
        logging.info("random search: %d trials", MAX_TRIALS)
        ops: list[searcher.Operation] = []
        for _ in range(min(MAX_CONCURRENT_TRIALS, MAX_TRIALS)):
            ops += self._create()
        return ops

    def on_trial_created(
        self, searcher_state: searcher.SearcherState, request_id: uuid.UUID
    ) -> list[searcher.Operation]:
        return []

    def on_validation_completed(
        self,
        searcher_state: searcher.SearcherState,
        request_id: uuid.UUID,
        metric: float,
        train_length: int,
    ) -> list[searcher.Operation]:
        self.next_length[request_id] += 1
        if self.next_length[request_id] < len(LENGTHS):
            length = LENGTHS[self.next_length[request_id]]
            return [searcher.ValidateAfter(request_id=request_id, length=length)]
        return [searcher.Close(request_id=request_id)]

    def on_trial_closed(
        self, searcher_state: searcher.SearcherState, request_id: uuid.UUID
    ) -> list[searcher.Operation]:
        self.closed.add(request_id)
        if self.created < MAX_TRIALS:
            return self._create()
        if len(self.closed) == self.created:
            return [searcher.Shutdown()]
        return []

    def on_trial_exited_early(
        self,
        searcher_state: searcher.SearcherState,
        request_id: uuid.UUID,
        exited_reason: searcher.ExitedReason,
    ) -> list[searcher.Operation]:
        logging.warning("trial %s exited early: %s", request_id, exited_reason)
        return []

    def progress(self, searcher_state: searcher.SearcherState) -> float:
        return len(self.closed) / MAX_TRIALS


class FailingSearch(RandomSearchMethod):
    def on_validation_completed(
        self,
        searcher_state: searcher.SearcherState,
        request_id: uuid.UUID,
        metric: float,
        train_length: int,
    ) -> list[searcher.Operation]:
        raise ValueError(f"cannot use the metric {metric:.3f}")
