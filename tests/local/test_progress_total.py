"""The local run's progress bar gets a trial's total batches only where the search sets a
length: a script that decides its own length (no ``max_length``) has no total, where the bar
showed 9,007,199,254,740,992 (the open length, 2^53) before."""

from __future__ import annotations

from pathlib import Path

import pytest

from pedl.local import LocalExperiment
from pedl.local._runner import LocalTrial

MODEL = Path(__file__).parents[1] / "compat" / "models" / "det038_core_api"


class Totals:
    def __init__(self) -> None:
        self.seen: list[int | None] = []

    def trial_started(self, trial: LocalTrial, target_batches: int | None) -> None:
        self.seen.append(target_batches)

    def trial_progress(self, trial_id: int, batches: int, metrics: object) -> None:
        pass

    def trial_finished(self, trial: LocalTrial) -> None:
        pass


@pytest.mark.parametrize(
    ("overrides", "total"),
    [((), None), (("searcher.max_length.batches=30",), 30)],
    ids=["script's own length", "max_length"],
)
def test_the_progress_total_is_the_searchers_length_or_none(
    tmp_path: Path, overrides: tuple[str, ...], total: int | None
) -> None:
    totals = Totals()
    experiment = LocalExperiment.create(
        MODEL / "const.yaml", MODEL, tmp_path, overrides=overrides, display=totals
    )
    summary = experiment.run()
    experiment.close()
    assert summary.state == "COMPLETED", [t.error for t in summary.trials]
    assert totals.seen == [total]
