"""The master's TensorBoard pieces without a master: the scalars written for metric rows
(read back from the event file's records), and the manager's limits on a real
``tensorboard`` process (bounded count, the same trials reuse one, stop ends the process)."""

from __future__ import annotations

import math
import struct
from pathlib import Path

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st
from tensorboard.compat.proto import event_pb2

from pedl.db import Database
from pedl.master.tensorboard import (
    ScalarEventFile,
    TensorBoardError,
    TensorBoardManager,
    TensorBoardState,
    TrialSource,
    scalar_tag,
    scalars,
)
from pedl.vocabulary import MetricKind
from tests.master.helpers import create_experiment, create_trial


def _events(path: Path) -> list[event_pb2.Event]:
    data, events, at = path.read_bytes(), [], 0
    while at < len(data):
        (length,) = struct.unpack("<Q", data[at : at + 8])
        events.append(event_pb2.Event.FromString(data[at + 12 : at + 12 + length]))
        at += 12 + length + 4
    return events


names = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), min_size=1, max_size=20)


@given(names)
def test_tags(name: str) -> None:
    assert scalar_tag(MetricKind.TRAINING, name) == f"PEDL/{name}"
    validation = scalar_tag(MetricKind.VALIDATION, name)
    assert validation == (f"PEDL/{name}" if name.startswith("val") else f"PEDL/val_{name}")


def test_values_kept_and_left_out() -> None:
    row = {"loss": 0.5, "n": 3, "nan": "NaN", "inf": "Infinity", "flag": True, "s": "x", "l": [1]}
    pairs = dict(scalars(MetricKind.TRAINING, row))
    assert set(pairs) == {"PEDL/loss", "PEDL/n", "PEDL/nan", "PEDL/inf"}
    assert pairs["PEDL/loss"] == 0.5 and pairs["PEDL/n"] == 3.0
    assert math.isnan(pairs["PEDL/nan"]) and pairs["PEDL/inf"] == math.inf


def test_event_file_round_trip(tmp_path: Path) -> None:
    events = ScalarEventFile(tmp_path / "run")
    events.append([(1, 10.0, [("PEDL/loss", 0.5)]), (2, 11.0, [])])
    events.append([(3, 12.0, [("PEDL/loss", 0.25), ("PEDL/val_acc", 0.9)])])
    read = _events(events.path)
    assert read[0].file_version == "brain.Event:2"
    got = [(e.step, v.tag, *v.tensor.double_val) for e in read[1:] for v in e.summary.value]
    assert {v.metadata.plugin_data.plugin_name for e in read[1:] for v in e.summary.value} == {
        "scalars"
    }
    assert got == [(1, "PEDL/loss", 0.5), (3, "PEDL/loss", 0.25), (3, "PEDL/val_acc", 0.9)]


@pytest.mark.slow
def test_manager_limits_reuse_and_stop(tmp_path: Path) -> None:
    database = Database(f"sqlite:///{tmp_path / 'pedl.db'}")
    database.upgrade()
    manager = TensorBoardManager(database, tmp_path, max_tensorboards=1)
    manager.start()
    try:
        board = manager.launch("alice", [TrialSource(1, 1)], [1])
        assert manager.launch("alice", [TrialSource(1, 1)], [1]) is board  # the same one
        with pytest.raises(TensorBoardError) as refused:
            manager.launch("alice", [TrialSource(1, 2)], [1])
        assert refused.value.status == 409 and "stop one first" in refused.value.message
        with pytest.raises(TensorBoardError) as too_many:
            manager.launch("alice", [TrialSource(1, t) for t in range(1, 102)], [1])
        assert too_many.value.status == 422 and too_many.value.field == "trial_ids"
        process = board.process
        assert process is not None and process.poll() is None
        stopped = manager.stop(board.id)
        assert stopped.state is TensorBoardState.STOPPED and process.poll() is not None
        assert not board.directory.exists() and manager.list() == []
        with pytest.raises(TensorBoardError) as unknown:
            manager.get(board.id)
        assert unknown.value.status == 404
    finally:
        manager.close()
        database.dispose()


@pytest.mark.slow
def test_trials_created_after_the_start_join(
    client: httpx.Client, database: Database, tmp_path: Path
) -> None:
    """A TensorBoard started over an experiment shows its trials created later (an adaptive
    search's), with their metrics; one started over trials only does not grow."""
    experiment_id = create_experiment(client)["id"]
    first, _ = create_trial(database, experiment_id)
    manager = TensorBoardManager(database, tmp_path)  # no sync thread: passes run by hand
    try:
        followed = manager.launch(
            "alice", [TrialSource(experiment_id, first)], [experiment_id], followed=[experiment_id]
        )
        fixed = manager.launch("bob", [TrialSource(experiment_id, first)], [experiment_id])
        second, token = create_trial(database, experiment_id)
        response = client.post(
            f"/trials/{second}/metrics",
            json={"rows": [{"kind": "training", "total_batches": 5, "metrics": {"loss": 0.5}}]},
            headers={"Authorization": f"Bearer {token}"},
        )
        assert response.status_code < 300, response.text
        manager._sync(followed)
        manager._sync(fixed)
        assert followed.trial_ids == [first, second]
        run = followed.directory / TrialSource(experiment_id, second).run
        read = [
            (e.step, v.tag) for e in _events(next(run.glob("events.*"))) for v in e.summary.value
        ]
        assert read == [(5, "PEDL/loss")]
        assert fixed.trial_ids == [first]
    finally:
        manager.close()
