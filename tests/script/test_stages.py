"""The pieces of a script's stages without TensorFlow: a stage's searcher session in its own
batches (the searcher's lengths shared across stages, the stage's own length within them), and
a History of one value per epoch built from the chunks' reports and kept across a resume."""

from __future__ import annotations

import pytest

from pedl.core import SearcherContext
from pedl.script._stages import EpochHistory, SearcherLengths, StageLengths


class Searcher:
    def __init__(self, lengths: list[int]) -> None:
        self.lengths = lengths
        self.completed: list[int] = []

    def next_length(self) -> int | None:
        return self.lengths[0] if self.lengths else None

    def complete(self, length: int, searcher_metric: float) -> None:
        assert self.lengths[0] == length
        self.completed.append(self.lengths.pop(0))


def train(session: StageLengths) -> list[int]:
    """The lengths a controller trains to (in the stage's batches), each completed."""
    reached = []
    for op in SearcherContext(session, "batches").operations():
        reached.append(op.length)
        op.report_completed(0.5)
    return reached


def test_stages_share_the_searchers_lengths_in_the_trials_batches() -> None:
    """Rungs at 10 and 30 batches of the trial: a first stage of its own 12 batches completes
    the first and stops at 12 (the searcher's 30 not reached); the second, from 12, trains to
    18 of its own (30 of the trial) and completes it."""
    searcher = Searcher([10, 30])
    lengths = SearcherLengths(searcher)
    first = StageLengths(lengths, offset=0, own=12, to_batches=lambda n: n)
    assert train(first) == [10, 12]
    assert first.completed and searcher.completed == [10]
    second = StageLengths(lengths, offset=12, own=None, to_batches=lambda n: n)
    assert train(second) == [18]
    assert searcher.completed == [10, 30] and lengths.exhausted
    later = StageLengths(lengths, offset=30, own=5, to_batches=lambda n: n)
    assert train(later) == []


def test_without_the_searchers_lengths_a_stage_trains_its_own() -> None:
    stage = StageLengths(None, offset=40, own=6, to_batches=lambda n: n)
    assert train(stage) == [6]
    assert stage.completed
    with pytest.raises(ValueError, match="needs the searcher's lengths or its own"):
        StageLengths(None, offset=0, own=None, to_batches=lambda n: n)


def test_history_has_one_value_per_epoch_and_survives_a_resume() -> None:
    """Epochs of 4 batches, chunks at 3, 4, 7, 8: an epoch's value is its chunks' mean
    weighted by batches; validation at an epoch's end only, and at the stage's end."""
    history = EpochHistory(4)
    history.training(3, {"loss": 1.0})
    history.training(4, {"loss": 2.0})
    history.validation(4, {"val_loss": 0.5})
    saved = history.state()
    resumed = EpochHistory(4)
    resumed.load_state(saved)
    for h in (history, resumed):
        h.training(7, {"loss": 4.0})
        h.validation(7, {"val_loss": 0.25})  # not an epoch's end: not kept
        h.training(8, {"loss": 8.0})
        h.training(10, {"loss": 1.0})
        h.validation(10, {"val_loss": 0.125})  # the stage's end, a partial epoch
        assert h.finish(10) == {
            "loss": [1.25, 5.0, 1.0],
            "val_loss": [0.5, 0.125],
        }


def test_history_without_an_epochs_length_keeps_every_report() -> None:
    history = EpochHistory(None)
    history.validation(0, {"val_loss": 9.0})  # an initial validation: not Keras's
    history.training(5, {"loss": 1.0})
    history.validation(5, {"val_loss": 2.0})
    assert history.finish(5) == {"loss": [1.0], "val_loss": [2.0]}
