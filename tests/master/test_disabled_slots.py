"""Disabled slots below the orchestrator: the slot book (which slots take trials, which trial
holds each, which must stop) and the local resource manager keeping new trials off disabled
GPUs (real child processes of a stand-in program). The scheduler end to end:
``test_agent_disable_e2e.py``."""

from __future__ import annotations

import queue
import stat
from pathlib import Path

import pytest

from pedl.db import Database
from pedl.db import agents as agents_repo
from pedl.db.agents import WHOLE_AGENT
from pedl.master.orchestrator._slots import SlotBook
from pedl.master.rm import LocalResourceManager, TrialLaunch
from pedl.master.scheduler import RunningTrial, TrialRequest, schedule
from tests.waits import scaled

FAKE_TRIAL = """#!/bin/bash
echo "gpus $CUDA_VISIBLE_DEVICES"
if [ "$FAKE_MODE" = sleep ]; then sleep 30; fi
exit 0
"""


@pytest.fixture
def fake_python(tmp_path: Path) -> str:
    path = tmp_path / "fake-python"
    path.write_text(FAKE_TRIAL)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


def test_the_slot_book() -> None:
    book = SlotBook()
    book.assign(7, 1, 3, None)
    book.assign(8, 1, 3, None)
    assert [s.trial_id for s in book.states(3)] == [7, 8, None]
    book.set_disabled({0: True, 2: False})
    assert book.disabled_slots(3) == {0, 2} and book.idle_disabled(3) == 1
    assert book.to_stop([7, 8]) == set()  # slot 0 drains; slot 2 holds no trial
    states = book.states(3)
    assert [(s.enabled, s.draining) for s in states] == [
        (False, True),
        (True, False),
        (False, False),
    ]
    book.release(7)
    assert book.idle_disabled(3) == 2
    book.assign(9, 1, 3, None)  # the enabled free slot first: none; then a disabled one
    assert book.states(3)[0].trial_id == 9
    book.set_disabled({1: False})
    assert book.to_stop([8, 9]) == {8}
    book.set_disabled({WHOLE_AGENT: True})
    assert not book.agent_enabled and book.agent_draining and book.to_stop([8, 9]) == set()
    assert book.disabled_slots(3) == {0, 1, 2}
    assert all(not s.enabled and s.draining for s in book.states(3))
    book.set_disabled({WHOLE_AGENT: False})
    assert book.to_stop([8, 9]) == {8, 9}


def test_the_scheduler_leaves_disabled_slots_free() -> None:
    queued = [TrialRequest(1, 1, 1, 1), TrialRequest(2, 1, 1, 2)]
    placement = schedule(2, [], queued, {}, disabled_slots=1)
    assert placement.start == [1]
    assert placement.waiting == {2: "waiting for slots: needs 1, 0 of 2 free, 1 disabled"}
    running = [RunningTrial(1, 1, 1)]
    assert schedule(2, running, queued[1:], {}, disabled_slots=0).start == [2]


def test_no_new_trial_gets_a_disabled_gpu(fake_python: str) -> None:
    exits: queue.Queue[tuple[int, int]] = queue.Queue()
    lines: dict[int, list[str]] = {}

    def sink(trial_id: int, batch: list[tuple[str, str, int | None]]) -> None:
        lines.setdefault(trial_id, []).extend(text for _, text, _ in batch)

    rm = LocalResourceManager(
        cpu_slots=8,
        on_exit=lambda t, c: exits.put((t, c)),
        log_sink=sink,
        gpus=["0", "1", "2"],
        python=fake_python,
    )
    try:
        rm.set_disabled_slots(frozenset({0}))
        rm.start(TrialLaunch(1, "http://x", "t", 1, {"FAKE_MODE": "sleep"}))
        assert rm.slot_ids(1) == [1]
        rm.set_disabled_slots(frozenset({0, 2}))
        with pytest.raises(RuntimeError, match="0 are free and enabled"):
            rm.start(TrialLaunch(2, "http://x", "t", 1))
        rm.set_disabled_slots(frozenset({1}))  # trial 1 goes on there
        assert rm.slot_ids(1) == [1]
        rm.start(TrialLaunch(3, "http://x", "t", 1))
        assert exits.get(timeout=scaled(10)) == (3, 0)
        assert "gpus 0" in lines[3]
        rm.kill(1)
        assert exits.get(timeout=scaled(10)) == (1, -9)
        assert "gpus 1" in lines[1]
        assert rm.slot_ids(1) is None
    finally:
        rm.shutdown()


def test_cpu_slots_have_no_ids() -> None:
    rm = LocalResourceManager(
        cpu_slots=2, on_exit=lambda t, c: None, log_sink=lambda t, b: None, gpus=[]
    )
    try:
        rm.set_disabled_slots(frozenset({1}))
        assert rm.slot_ids(1) is None and rm.total_slots == 2
    finally:
        rm.shutdown()


def test_the_settings_are_stored(database: Database) -> None:
    """On SQLite and PostgreSQL: disable, disable again (the new drain), enable."""
    with database.session(write=True) as session:
        agents_repo.disable(session, "master", 1, drain=False, by="admin")
        agents_repo.disable(session, "master", WHOLE_AGENT, drain=True, by="admin")
    with database.session(write=True) as session:
        assert agents_repo.disabled(session, "master") == {1: False, WHOLE_AGENT: True}
        agents_repo.disable(session, "master", 1, drain=True, by="other")
    with database.session(write=True) as session:
        assert agents_repo.disabled(session, "master")[1] is True
        assert agents_repo.enable(session, "master", WHOLE_AGENT)
        assert not agents_repo.enable(session, "master", WHOLE_AGENT)
        assert agents_repo.disabled(session, "other-agent") == {}
    with database.session() as session:
        assert agents_repo.disabled(session, "master") == {1: True}
