"""The experiment driver: pure rules, checked with an in-memory shell and hypothesis."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pedl.config import parse_config
from pedl.engine import (
    Action,
    AppendSearcherEvent,
    CreateTrial,
    DeleteCheckpoints,
    ExperimentDriver,
    KillTrial,
    LogTrial,
    OperationAnswer,
    SetExperimentState,
    SetTrialState,
    TrialRecord,
)
from pedl.searcher import Close, GridSearch, ValidateAfter
from pedl.storage import CheckpointSummary
from pedl.vocabulary import ExperimentState, TrialError, TrialOutcome, TrialState, outcome_note
from pedl.vocabulary._outcome_note import WAITING_NOTE


def config(searcher: dict[str, Any], *, max_restarts: int = 2, units: list[int] | None = None):
    return parse_config(
        {
            "name": "driver",
            "hyperparameters": {
                "global_batch_size": 4,
                "units": {"type": "categorical", "vals": units or [1, 2, 3]},
            },
            "searcher": {
                "metric": "loss",
                "smaller_is_better": True,
                "max_length": {"batches": 10},
                **searcher,
            },
            "max_restarts": max_restarts,
            "checkpoint_storage": {
                "type": "shared_fs",
                "host_path": "/tmp/unused",
                "save_trial_latest": 1,
                "save_trial_best": 0,
                "save_experiment_best": 0,
            },
        }
    )


GRID = {"name": "grid"}


@dataclass
class Shell:
    """A store and launcher in memory: applies actions as a real store does."""

    driver: ExperimentDriver
    events: list[dict[str, Any]] = field(default_factory=list)
    trials: dict[int, TrialRecord] = field(default_factory=dict)
    experiment: ExperimentState = ExperimentState.ACTIVE
    error: str | None = None
    outcomes: dict[int, TrialOutcome | None] = field(default_factory=dict)
    errors: dict[int, TrialError | None] = field(default_factory=dict)
    killed: list[int] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    checkpoints: dict[str, CheckpointSummary] = field(default_factory=dict)
    logs: dict[int, list[str]] = field(default_factory=dict)
    next_id: int = 100

    def apply(self, actions: list[Action]) -> None:
        created = []
        for action in actions:
            if isinstance(action, AppendSearcherEvent):
                self.events.append(action.event)
            elif isinstance(action, CreateTrial):
                self.next_id += 1
                self.trials[self.next_id] = TrialRecord(
                    self.next_id, action.request_id, action.hparams, action.seed, TrialState.ACTIVE
                )
                created.append((action.request_id, self.next_id))
            elif isinstance(action, SetTrialState):
                old = self.trials[action.trial_id]
                self.trials[action.trial_id] = replace(
                    old,
                    state=action.state,
                    restarts=action.restarts if action.restarts is not None else old.restarts,
                    outcome=action.outcome if action.outcome is not None else old.outcome,
                    error=action.error if action.outcome is not None else old.error,
                )
                if action.outcome is not None:
                    self.outcomes[action.trial_id] = action.outcome
                    self.errors[action.trial_id] = action.error
            elif isinstance(action, SetExperimentState):
                self.experiment = action.state
                self.error = action.error
            elif isinstance(action, KillTrial):
                self.killed.append(action.trial_id)
            elif isinstance(action, LogTrial):
                self.logs.setdefault(action.trial_id, []).append(action.message)
            elif isinstance(action, DeleteCheckpoints):
                self.deleted.extend(action.storage_ids)
                for storage_id in action.storage_ids:
                    del self.checkpoints[storage_id]
        for request_id, trial_id in created:
            self.apply(self.driver.trial_created(request_id, trial_id))

    def user(self, state: ExperimentState) -> None:
        """A user's pause/activate/cancel/kill: the API records it, then the driver hears it."""
        self.experiment = state
        self.apply(self.driver.set_experiment_state(state))

    def checkpoint(self, trial_id: int, batches: int) -> None:
        storage_id = f"ckpt-{trial_id}-{batches}"
        summary = CheckpointSummary(storage_id, trial_id, batches, float(batches))
        self.checkpoints[storage_id] = summary
        self.trials[trial_id] = replace(
            self.trials[trial_id], latest_checkpoint=storage_id, latest_checkpoint_batches=batches
        )
        self.apply(self.driver.checkpoint_completed(summary))

    def validate(self, trial_id: int, length: int, metric: float) -> None:
        """The trial's validation: the store records its metric, then the driver hears it."""
        self.trials[trial_id] = replace(self.trials[trial_id], validation_metric=metric)
        self.apply(self.driver.validation_reported(trial_id, length, metric))

    def continued(self) -> None:
        """``det experiment continue`` of the ended grid or random search, as the master's
        API records it (an empty searcher log, restarts back to 0, every trial but the
        COMPLETED ones ACTIVE with no outcome), then a driver built from that record."""
        assert self.experiment.is_terminal
        self.events = []
        self.experiment = ExperimentState.ACTIVE
        for trial_id, record in self.trials.items():
            if record.state == TrialState.COMPLETED:
                self.trials[trial_id] = replace(record, restarts=0)
            else:
                self.trials[trial_id] = replace(
                    record, state=TrialState.ACTIVE, restarts=0, outcome=None
                )
                self.outcomes.pop(trial_id, None)
        self.driver = self.rebuilt()
        self.apply(self.driver.start())

    def rebuilt(self) -> ExperimentDriver:
        return ExperimentDriver(
            self.driver.config,
            state=self.experiment,
            events=self.events,
            trials=self.trials.values(),
            checkpoints=self.checkpoints.values(),
        )


def start(cfg: Any) -> Shell:
    shell = Shell(ExperimentDriver(cfg))
    shell.apply(shell.driver.start())
    return shell


def run_attempt(shell: Shell, trial_id: int, outcome: TrialOutcome, error: TrialError | None):
    """One process of the trial: trains through its lengths (checkpointing after each), then
    ends with ``outcome`` (ERRORED/INVALID_HP/STOPPED_EARLY before reporting anything)."""
    shell.apply(shell.driver.trial_started(trial_id))
    if outcome in (TrialOutcome.COMPLETED, TrialOutcome.PREEMPTED):
        while (answer := shell.driver.next_operation(trial_id)).status == "train":
            assert answer.length is not None
            shell.checkpoint(trial_id, answer.length)
            shell.validate(trial_id, answer.length, 1.0 / trial_id)
            if outcome == TrialOutcome.PREEMPTED:
                break
    shell.apply(shell.driver.trial_exited(trial_id, outcome, error))


def crash_after_checkpoint(shell: Shell, trial_id: int) -> None:
    """One process of the trial checkpoints at its first length, then the shell crashes (it
    and the process die) before the validation report is recorded; a driver rebuilt from
    the store goes on."""
    shell.apply(shell.driver.trial_started(trial_id))
    answer = shell.driver.next_operation(trial_id)
    if answer.status == "train":
        assert answer.length is not None
        shell.checkpoint(trial_id, answer.length)
    shell.driver = shell.rebuilt()
    shell.apply(shell.driver.start())


CRASH = (TrialOutcome.PREEMPTED, TrialError("ShellCrash", "the shell died"))
"""A plan step that is not an outcome: :func:`crash_after_checkpoint`."""

ATTEMPTS = st.sampled_from(
    [
        CRASH,
        (TrialOutcome.COMPLETED, None),
        (TrialOutcome.PREEMPTED, None),
        (TrialOutcome.STOPPED_EARLY, None),
        (TrialOutcome.INVALID_HP, TrialError("InvalidHP", "no")),
        (TrialOutcome.ERRORED, TrialError("ValueError", "late", "m.py:3", before_progress=False)),
        (TrialOutcome.ERRORED, TrialError("ImportError", "early", "m.py:1", before_progress=True)),
    ]
)


@settings(max_examples=150)
@given(
    searcher=st.sampled_from([GRID, {"name": "random", "max_trials": 3}]),
    plan=st.lists(ATTEMPTS, min_size=1, max_size=40),
    rebuild_every=st.integers(1, 5),
)
def test_any_sequence_of_outcomes_ends_the_experiment_by_the_rules(
    searcher: dict[str, Any],
    plan: list[tuple[TrialOutcome, TrialError | None]],
    rebuild_every: int,
) -> None:
    shell = start(config(searcher))
    attempts: dict[int, list[tuple[TrialOutcome, TrialError | None]]] = {}
    step = 0
    while not shell.driver.finished:
        runnable = shell.driver.runnable_trials()
        assert runnable, "a live experiment always has a trial to run"
        trial_id = runnable[0]
        outcome, error = plan[step % len(plan)] if step < 200 else (TrialOutcome.COMPLETED, None)
        if (outcome, error) == CRASH:
            crash_after_checkpoint(shell, trial_id)
            step += 1
            continue
        attempts.setdefault(trial_id, []).append((outcome, error))
        run_attempt(shell, trial_id, outcome, error)
        step += 1
        if step % rebuild_every == 0 and not shell.driver.finished:
            # What the store holds is enough to go on, as after a crash.
            shell.driver = shell.rebuilt()
            shell.apply(shell.driver.start())
        assert step < 400
    assert shell.experiment in (ExperimentState.COMPLETED, ExperimentState.ERROR)
    for trial_id, record in shell.trials.items():
        assert record.state.is_terminal
        tried = attempts[trial_id]
        errors = [e for o, e in tried if o == TrialOutcome.ERRORED]
        assert len(errors) <= 1 + 2  # 1 + max_restarts
        assert record.restarts == len(errors) - (record.state == TrialState.ERROR)
        early = [i for i, (_, e) in enumerate(tried) if e is not None and e.before_progress]
        if early:  # an error before progress is never retried: it was the last attempt
            assert early == [len(tried) - 1]
            assert record.state == TrialState.ERROR
    errored = [t for t in shell.trials.values() if t.state == TrialState.ERROR]
    valid = [
        t
        for t in shell.trials.values()
        if shell.outcomes.get(t.trial_id) != TrialOutcome.INVALID_HP
    ]
    if shell.experiment == ExperimentState.ERROR:
        assert shell.error and "every trial failed" in shell.error
        assert len(errored) == len(shell.trials)
    else:
        assert len(errored) < len(shell.trials)
    if searcher["name"] == "random":
        # InvalidHP draws are replaced: three trials with valid hyperparameters.
        assert len(valid) == 3
    else:
        assert sorted(t.hparams["units"] for t in shell.trials.values()) == [1, 2, 3]
    # Garbage collection kept at most the latest checkpoint of each trial.
    assert len(shell.checkpoints) <= len(shell.trials)


def test_a_crash_between_a_checkpoint_and_its_validation_report_gives_the_length_again() -> None:
    """The process checkpointed at its length, then the shell died before the validation
    was recorded: restored from that checkpoint, the process is given the length again (it
    reports the validation from the checkpoint) rather than told to wait, which would have
    exited and restarted it forever."""
    shell = start(config(GRID, units=[1]))
    (trial_id,) = shell.driver.runnable_trials()
    crash_after_checkpoint(shell, trial_id)
    assert shell.trials[trial_id].latest_checkpoint_batches == 10
    assert shell.driver.runnable_trials() == [trial_id]
    shell.apply(shell.driver.trial_started(trial_id))
    assert shell.driver.next_operation(trial_id) == OperationAnswer("train", 10)
    shell.apply(shell.driver.validation_reported(trial_id, 10, 0.5))
    assert shell.driver.next_operation(trial_id) == OperationAnswer("closed")
    shell.apply(shell.driver.trial_exited(trial_id, TrialOutcome.COMPLETED))
    assert shell.experiment == ExperimentState.COMPLETED


def test_a_crash_between_the_last_validation_and_the_final_checkpoint_runs_it_again() -> None:
    """The process checkpointed at batch 5, trained to its length (10), reported the
    validation there, and the shell died (with the process) before the checkpoint a trial
    saves as it ends: the rebuilt driver runs the trial once more from batch 5 (the searcher
    already heard its length; it hears nothing new), so the trial ends with its final
    weights, not with batch 5's (a master SIGKILLed there lost them)."""
    shell = start(config(GRID, units=[1]))
    (trial_id,) = shell.driver.runnable_trials()
    shell.apply(shell.driver.trial_started(trial_id))
    assert shell.driver.next_operation(trial_id) == OperationAnswer("train", 10)
    shell.checkpoint(trial_id, 5)  # min_checkpoint_period's
    shell.validate(trial_id, 10, 0.5)
    shell.driver = shell.rebuilt()
    shell.apply(shell.driver.start())
    assert shell.trials[trial_id].state != TrialState.COMPLETED
    assert any("before its final checkpoint" in line for line in shell.logs[trial_id])
    assert shell.driver.runnable_trials() == [trial_id]
    shell.apply(shell.driver.trial_started(trial_id))
    assert shell.driver.next_operation(trial_id) == OperationAnswer("train", 10)
    shell.validate(trial_id, 10, 0.5)
    assert shell.driver.next_operation(trial_id) == OperationAnswer("closed")
    shell.checkpoint(trial_id, 10)
    shell.apply(shell.driver.trial_exited(trial_id, TrialOutcome.COMPLETED))
    assert shell.trials[trial_id].state == TrialState.COMPLETED
    assert shell.trials[trial_id].latest_checkpoint_batches == 10
    assert shell.experiment == ExperimentState.COMPLETED
    heard = [e for e in shell.events if e["kind"] == "validation_completed"]
    assert len(heard) == 1  # the searcher heard the length once


def test_a_rerun_that_saves_no_checkpoint_still_ends() -> None:
    """A trial owed its final checkpoint runs once more, not forever: a Core API script may
    save none (its run after the crash ends it)."""
    shell = start(config(GRID, units=[1]))
    (trial_id,) = shell.driver.runnable_trials()
    shell.apply(shell.driver.trial_started(trial_id))
    assert shell.driver.next_operation(trial_id) == OperationAnswer("train", 10)
    shell.validate(trial_id, 10, 0.5)
    shell.driver = shell.rebuilt()
    shell.apply(shell.driver.start())
    assert shell.driver.runnable_trials() == [trial_id]
    shell.apply(shell.driver.trial_started(trial_id))
    assert shell.driver.next_operation(trial_id) == OperationAnswer("train", 10)
    shell.validate(trial_id, 10, 0.5)
    shell.apply(shell.driver.trial_exited(trial_id, TrialOutcome.COMPLETED))
    assert shell.trials[trial_id].state == TrialState.COMPLETED
    assert shell.experiment == ExperimentState.COMPLETED


def test_an_error_before_progress_ends_the_trial_after_one_attempt() -> None:
    shell = start(config(GRID, units=[1]))
    (trial_id,) = shell.driver.runnable_trials()
    error = TrialError("NameError", "name 'x' is not defined", "model.py:7", before_progress=True)
    run_attempt(shell, trial_id, TrialOutcome.ERRORED, error)
    assert shell.trials[trial_id].state == TrialState.ERROR
    assert shell.trials[trial_id].restarts == 0
    assert shell.errors[trial_id] == error
    assert shell.experiment == ExperimentState.ERROR
    assert shell.error is not None
    assert "trial 101: NameError: name 'x' is not defined (model.py:7)" in shell.error


def test_an_error_after_progress_restarts_up_to_max_restarts() -> None:
    shell = start(config(GRID, units=[1], max_restarts=2))
    (trial_id,) = shell.driver.runnable_trials()
    late = TrialError("ValueError", "nan loss", "model.py:9", before_progress=False)
    for expected_restarts in (1, 2):
        run_attempt(shell, trial_id, TrialOutcome.ERRORED, late)
        assert shell.trials[trial_id].restarts == expected_restarts
        assert shell.trials[trial_id].state == TrialState.ACTIVE
        assert shell.driver.runnable_trials() == [trial_id]
    run_attempt(shell, trial_id, TrialOutcome.ERRORED, late)
    assert shell.trials[trial_id].state == TrialState.ERROR
    assert shell.experiment == ExperimentState.ERROR


def test_the_same_error_at_the_same_batch_after_a_restart_ends_the_trial() -> None:
    shell = start(config(GRID, units=[1], max_restarts=5))
    (trial_id,) = shell.driver.runnable_trials()
    late = TrialError("ValueError", "nan loss", "model.py:9", batches=12)
    run_attempt(shell, trial_id, TrialOutcome.ERRORED, late)
    assert shell.trials[trial_id].state == TrialState.ACTIVE  # once: it may be transient
    run_attempt(shell, trial_id, TrialOutcome.ERRORED, late)
    assert shell.trials[trial_id].state == TrialState.ERROR
    assert shell.trials[trial_id].restarts == 1
    assert shell.errors[trial_id] == replace(late, recurred=True)
    assert any("same error at the same batch (12)" in line for line in shell.logs[trial_id])


def test_only_the_driver_marks_an_error_recurred() -> None:
    """A process reporting ``recurred`` does not make the driver say so (nor stop restarts)."""
    shell = start(config(GRID, units=[1], max_restarts=5))
    (trial_id,) = shell.driver.runnable_trials()
    claimed = TrialError("ValueError", "nan loss", "model.py:9", batches=12, recurred=True)
    run_attempt(shell, trial_id, TrialOutcome.ERRORED, claimed)
    assert shell.trials[trial_id].state == TrialState.ACTIVE
    run_attempt(shell, trial_id, TrialOutcome.ERRORED, replace(claimed, batches=13))
    assert shell.trials[trial_id].restarts == 2
    assert shell.errors[trial_id].recurred is False


def test_a_driver_rebuilt_between_the_two_errors_still_ends_the_trial() -> None:
    shell = start(config(GRID, units=[1], max_restarts=5))
    (trial_id,) = shell.driver.runnable_trials()
    late = TrialError("ValueError", "nan loss", "model.py:9", batches=12)
    run_attempt(shell, trial_id, TrialOutcome.ERRORED, late)
    shell.driver = shell.rebuilt()  # the master restarted: the store's record of the trial
    shell.apply(shell.driver.start())
    run_attempt(shell, trial_id, TrialOutcome.ERRORED, late)
    assert shell.trials[trial_id].state == TrialState.ERROR
    assert shell.trials[trial_id].restarts == 1


@pytest.mark.parametrize(
    "second",
    [
        TrialError("ValueError", "nan loss", "model.py:9", batches=13),  # elsewhere in training
        TrialError("ValueError", "inf loss", "model.py:9", batches=12),  # another message
        TrialError("KeyError", "nan loss", "model.py:9", batches=12),
        TrialError("ValueError", "nan loss", "model.py:10", batches=12),
        TrialError("ValueError", "nan loss", "model.py:9"),  # the batch is not known
    ],
)
def test_an_error_that_differs_from_the_one_before_restarts_the_trial(second: TrialError) -> None:
    shell = start(config(GRID, units=[1], max_restarts=5))
    (trial_id,) = shell.driver.runnable_trials()
    run_attempt(
        shell,
        trial_id,
        TrialOutcome.ERRORED,
        TrialError("ValueError", "nan loss", "model.py:9", batches=12),
    )
    run_attempt(shell, trial_id, TrialOutcome.ERRORED, second)
    assert shell.trials[trial_id].state == TrialState.ACTIVE
    assert shell.trials[trial_id].restarts == 2


def test_a_failure_by_the_master_spends_no_restart() -> None:
    shell = start(config(GRID, units=[1], max_restarts=0))
    (trial_id,) = shell.driver.runnable_trials()
    full = TrialError("MasterDiskFull", "the master's disk is full", before_progress=True)
    for _ in range(3):  # before progress, and with no restarts to spend: still runs again
        shell.apply(shell.driver.trial_started(trial_id))
        shell.apply(shell.driver.trial_failed_by_master(trial_id, full))
        assert shell.trials[trial_id].state == TrialState.ACTIVE
        assert shell.trials[trial_id].restarts == 0
        assert shell.outcomes[trial_id] == TrialOutcome.ERRORED
        assert shell.errors[trial_id] == full
        assert shell.driver.runnable_trials() == [trial_id]
    run_attempt(shell, trial_id, TrialOutcome.COMPLETED, None)
    assert shell.experiment == ExperimentState.COMPLETED
    # A trial being killed is killed, whatever the master's part.
    shell = start(config(GRID, units=[1]))
    (trial_id,) = shell.driver.runnable_trials()
    shell.apply(shell.driver.trial_started(trial_id))
    shell.user(ExperimentState.STOPPING_KILLED)
    shell.apply(shell.driver.trial_failed_by_master(trial_id, full))
    assert shell.trials[trial_id].state == TrialState.CANCELED


def test_invalid_hp_in_a_grid_marks_the_point_and_completes() -> None:
    shell = start(config(GRID))
    first, second, third = shell.driver.runnable_trials()
    run_attempt(shell, first, TrialOutcome.INVALID_HP, TrialError("InvalidHP", "units"))
    run_attempt(shell, second, TrialOutcome.COMPLETED, None)
    run_attempt(shell, third, TrialOutcome.COMPLETED, None)
    assert shell.experiment == ExperimentState.COMPLETED
    assert shell.outcomes[first] == TrialOutcome.INVALID_HP
    assert shell.trials[first].state == TrialState.COMPLETED
    assert {e["reason"] for e in shell.events if e["kind"] == "trial_exited_early"} == {
        "INVALID_HP"
    }


def test_pause_preempts_running_trials_and_activate_resumes_them() -> None:
    shell = start(config(GRID, units=[1]))
    (trial_id,) = shell.driver.runnable_trials()
    shell.apply(shell.driver.trial_started(trial_id))
    assert not shell.driver.should_preempt(trial_id)
    shell.user(ExperimentState.PAUSED)
    assert shell.driver.should_preempt(trial_id)
    shell.apply(shell.driver.trial_exited(trial_id, TrialOutcome.PREEMPTED))
    assert shell.trials[trial_id].state == TrialState.PAUSED
    assert shell.driver.runnable_trials() == []
    shell.user(ExperimentState.ACTIVE)
    assert shell.trials[trial_id].state == TrialState.ACTIVE
    assert shell.driver.runnable_trials() == [trial_id]


def test_kill_stops_the_running_process_and_cancels() -> None:
    shell = start(config(GRID, units=[1, 2]))
    first, second = shell.driver.runnable_trials()
    shell.apply(shell.driver.trial_started(first))
    shell.user(ExperimentState.STOPPING_KILLED)
    assert shell.killed == [first]
    assert shell.trials[second].state == TrialState.CANCELED
    assert shell.experiment == ExperimentState.STOPPING_KILLED  # waits for the process
    shell.apply(shell.driver.trial_exited(first, TrialOutcome.ERRORED, TrialError("Killed", "")))
    assert shell.trials[first].state == TrialState.CANCELED
    assert shell.outcomes[first] == TrialOutcome.KILLED
    assert shell.experiment == ExperimentState.CANCELED


class _FailingGrid(GridSearch):
    def on_validation_completed(
        self, searcher_state: Any, request_id: Any, metric: float, train_length: int
    ) -> list[Any]:
        raise RuntimeError("searcher bug")


def test_a_searcher_that_fails_ends_the_experiment_with_its_error() -> None:
    cfg = config(GRID, units=[1])
    failing = _FailingGrid(points=[{"global_batch_size": 4, "units": 1}], max_length=10, seed=0)
    shell = Shell(ExperimentDriver(cfg, search_method=failing))
    shell.apply(shell.driver.start())
    (trial_id,) = shell.driver.runnable_trials()
    shell.apply(shell.driver.trial_started(trial_id))
    shell.apply(shell.driver.validation_reported(trial_id, 10, 0.5))
    assert shell.experiment == ExperimentState.ERROR
    assert shell.error == "the searcher failed: RuntimeError: searcher bug"
    assert shell.killed == [trial_id]
    assert shell.trials[trial_id].state == TrialState.CANCELED


class _PromoteLater(GridSearch):
    """Two trials to 5; the first is promoted to 10 only once the second has validated."""

    def __init__(self) -> None:
        super().__init__(points=[{"global_batch_size": 4, "units": u} for u in (1, 2)],
                         max_length=5, seed=0)  # fmt: skip
        self.validated: list[Any] = []

    def on_validation_completed(
        self, searcher_state: Any, request_id: Any, metric: float, train_length: int
    ) -> list[Any]:
        self.validated.append(request_id)
        if len(self.validated) == 2:
            first = self.validated[0]
            return [ValidateAfter(first, 10), Close(request_id)]
        if len(self.validated) == 3:
            return [Close(request_id)]
        return []


def test_a_restarted_trial_that_waits_for_the_searcher_no_longer_reads_errored() -> None:
    shell = Shell(ExperimentDriver(config(GRID, units=[1, 2]), search_method=_PromoteLater()))
    shell.apply(shell.driver.start())
    first, _ = shell.driver.runnable_trials()
    shell.apply(shell.driver.trial_started(first))
    shell.apply(shell.driver.validation_reported(first, 5, 0.5))
    shell.checkpoint(first, 5)
    late = TrialError("ValueError", "late", "m.py:3", before_progress=False)
    shell.apply(shell.driver.trial_exited(first, TrialOutcome.ERRORED, late))
    assert shell.trials[first].state == TrialState.ACTIVE
    assert outcome_note(TrialState.ACTIVE, shell.outcomes[first], 5) == "errored, to be restarted"
    # The restart has nothing to train until the searcher decides: it exits to wait.
    shell.apply(shell.driver.trial_started(first))
    assert shell.driver.next_operation(first) == OperationAnswer("wait")
    shell.apply(shell.driver.trial_exited(first, TrialOutcome.COMPLETED))
    assert shell.trials[first].state == TrialState.ACTIVE
    assert outcome_note(TrialState.ACTIVE, shell.outcomes[first], 5) == WAITING_NOTE


def test_a_waiting_trial_gives_up_its_process_and_resumes_from_its_checkpoint() -> None:
    cfg = config(GRID, units=[1, 2])
    shell = Shell(ExperimentDriver(cfg, search_method=_PromoteLater()))
    shell.apply(shell.driver.start())
    first, second = shell.driver.runnable_trials()
    shell.apply(shell.driver.trial_started(first))
    assert shell.driver.next_operation(first) == OperationAnswer("train", 5)
    shell.apply(shell.driver.validation_reported(first, 5, 0.5))
    shell.checkpoint(first, 5)
    # Nothing to do until the searcher decides: the process is told to wait, and exits.
    assert shell.driver.next_operation(first) == OperationAnswer("wait")
    shell.apply(shell.driver.trial_exited(first, TrialOutcome.COMPLETED))
    assert shell.trials[first].state == TrialState.ACTIVE
    # Not finished (ACTIVE); its run did what it was asked.
    assert shell.outcomes[first] == TrialOutcome.COMPLETED
    assert shell.driver.runnable_trials() == [second]
    shell.apply(shell.driver.trial_started(second))
    shell.apply(shell.driver.validation_reported(second, 5, 0.4))  # promotes the first
    assert shell.driver.next_operation(second) == OperationAnswer("closed")
    shell.apply(shell.driver.trial_exited(second, TrialOutcome.COMPLETED))
    assert shell.trials[second].state == TrialState.COMPLETED
    # The first is runnable again and resumes at its checkpoint: it trains 5 -> 10 only.
    assert shell.driver.runnable_trials() == [first]
    shell.apply(shell.driver.trial_started(first))
    assert shell.driver.next_operation(first) == OperationAnswer("train", 10)
    shell.apply(shell.driver.validation_reported(first, 10, 0.3))
    assert shell.driver.next_operation(first) == OperationAnswer("closed")
    shell.apply(shell.driver.trial_exited(first, TrialOutcome.COMPLETED))
    assert shell.outcomes[first] == TrialOutcome.COMPLETED
    assert shell.experiment == ExperimentState.COMPLETED


def test_an_adaptive_search_marks_the_trials_its_searcher_stopped_short() -> None:
    """ASHA closes the trials it does not promote at a lower rung: they end COMPLETED with
    the outcome STOPPED_BY_SEARCHER; the ones trained to max_length end COMPLETED."""
    cfg = config({"name": "async_halving", "num_rungs": 2, "divisor": 2, "max_trials": 4})
    shell = start(cfg)
    metrics = iter([0.9, 0.1, 0.5, 0.7, 0.2, 0.3, 0.4, 0.6])
    for _ in range(30):
        runnable = shell.driver.runnable_trials()
        if not runnable:
            break
        trial_id = runnable[0]
        shell.apply(shell.driver.trial_started(trial_id))
        while (answer := shell.driver.next_operation(trial_id)).status == "train":
            assert answer.length is not None
            shell.checkpoint(trial_id, answer.length)
            shell.apply(shell.driver.validation_reported(trial_id, answer.length, next(metrics)))
        shell.apply(shell.driver.trial_exited(trial_id, TrialOutcome.COMPLETED))
    assert shell.experiment == ExperimentState.COMPLETED
    assert {t.state for t in shell.trials.values()} == {TrialState.COMPLETED}
    outcomes = sorted(shell.outcomes.values())
    assert TrialOutcome.STOPPED_BY_SEARCHER in outcomes and TrialOutcome.COMPLETED in outcomes
    full = [t for t, o in shell.outcomes.items() if o == TrialOutcome.COMPLETED]
    assert all(shell.trials[t].latest_checkpoint_batches == 10 for t in full)
    short = [t for t, o in shell.outcomes.items() if o == TrialOutcome.STOPPED_BY_SEARCHER]
    assert all(shell.trials[t].latest_checkpoint_batches == 5 for t in short)


def test_config_changed_applies_a_new_retention_policy_at_once() -> None:
    """``det experiment set gc-policy`` on a running experiment: the checkpoints the new
    policy drops go now, but never a live trial's latest; the scheduler's settings (here
    max_slots) are the new config's."""
    shell = start(config({"name": "single"}))
    (trial_id,) = shell.trials
    shell.apply(shell.driver.trial_started(trial_id))
    for batches in (2, 4, 6):
        shell.checkpoint(trial_id, batches)
    assert shell.deleted == []  # save_trial_latest 1 applies when the trial ends
    old = shell.driver.config
    changed = old.model_copy(
        update={
            "resources": old.resources.model_copy(update={"max_slots": 3}),
            "checkpoint_storage": old.checkpoint_storage.model_copy(
                update={"save_trial_latest": 0}
            ),
        }
    )
    shell.apply(shell.driver.config_changed(changed))
    assert sorted(shell.deleted) == ["ckpt-101-2", "ckpt-101-4"]  # ckpt-101-6: the latest
    assert shell.driver.config.resources.max_slots == 3


def test_a_continued_grid_search_reruns_only_its_unfinished_trials() -> None:
    """``det experiment continue`` of a canceled grid search with max_concurrent_trials 2:
    the completed trial is answered from its record and not rerun, the canceled and errored
    ones train again from their latest checkpoints as the same trials, the one that waits
    for the searcher neither runs nor holds a slot until it is asked for, the point never
    created gets a new trial, and the search completes."""
    shell = start(config({"name": "grid", "max_concurrent_trials": 2}, max_restarts=0,
                         units=[1, 2, 3, 4, 5, 6]))  # fmt: skip
    done, canceled = shell.driver.runnable_trials()
    run_attempt(shell, done, TrialOutcome.COMPLETED, None)
    (errored,) = [t for t in shell.driver.runnable_trials() if t != canceled]
    late = TrialError("ValueError", "nan loss", "model.py:9", before_progress=False)
    run_attempt(shell, errored, TrialOutcome.ERRORED, late)
    (waiting,) = [t for t in shell.driver.runnable_trials() if t != canceled]
    shell.apply(shell.driver.trial_started(canceled))
    shell.checkpoint(canceled, 4)  # mid-way: its length is 10
    shell.user(ExperimentState.STOPPING_CANCELED)
    shell.apply(shell.driver.trial_exited(canceled, TrialOutcome.PREEMPTED))
    assert shell.experiment == ExperimentState.CANCELED
    before = {t: (r.request_id, r.hparams) for t, r in shell.trials.items()}
    # The canceled trial's close let the searcher create request 5 as the search stopped.
    (late_created,) = [t for t in before if t not in (done, canceled, errored, waiting)]
    states = {t: r.state for t, r in shell.trials.items()}
    assert states == {
        done: TrialState.COMPLETED,
        canceled: TrialState.CANCELED,
        errored: TrialState.ERROR,
        waiting: TrialState.CANCELED,
        late_created: TrialState.CANCELED,
    }

    shell.continued()
    assert shell.experiment == ExperimentState.ACTIVE
    # The searcher heard the completed trial's validation and close, and moved on.
    assert [(e["kind"], e.get("request_id")) for e in shell.events[:4]] == [
        ("initial_operations", None),
        ("trial_created", 1),
        ("validation_completed", 1),
        ("trial_closed", 1),
    ]
    assert shell.events[2]["metric"] == 1.0 / done and shell.events[2]["length"] == 10
    assert shell.driver.runnable_trials() == [canceled, errored]
    for trial_id in (waiting, late_created):  # wait for the searcher to ask for them
        assert shell.trials[trial_id].state == TrialState.ACTIVE
    assert shell.trials[canceled].latest_checkpoint == f"ckpt-{canceled}-4"  # kept
    ran = []
    while not shell.driver.finished:
        runnable = shell.driver.runnable_trials()
        assert done not in runnable and len(runnable) <= 2  # the searcher's limit
        ran.append(runnable[0])
        run_attempt(shell, runnable[0], TrialOutcome.COMPLETED, None)
        assert len(ran) < 10
    assert shell.experiment == ExperimentState.COMPLETED
    new = [t for t in shell.trials if t not in before]
    assert sorted(ran) == sorted([canceled, errored, waiting, late_created, *new])
    assert len(new) == 1
    assert {t: (r.request_id, r.hparams) for t, r in shell.trials.items() if t in before} == before
    assert sorted(r.request_id for r in shell.trials.values()) == [1, 2, 3, 4, 5, 6]
    assert {r.state for r in shell.trials.values()} == {TrialState.COMPLETED}
    assert all(r.restarts == 0 for r in shell.trials.values())
    assert shell.driver.progress() == 1.0


def test_a_waiting_carried_trial_killed_is_not_rerun() -> None:
    """A carried trial killed before its searcher asks for it ends CANCELED at once; when
    the searcher creates its request id, it hears that the trial exited (user canceled)."""
    shell = start(config({"name": "grid", "max_concurrent_trials": 1}, units=[1, 2, 3]))
    (first,) = shell.driver.runnable_trials()
    run_attempt(shell, first, TrialOutcome.COMPLETED, None)
    (second,) = shell.driver.runnable_trials()
    shell.apply(shell.driver.trial_started(second))
    shell.user(ExperimentState.STOPPING_CANCELED)
    shell.apply(shell.driver.trial_exited(second, TrialOutcome.PREEMPTED))
    (third,) = [t for t in shell.trials if t not in (first, second)]
    assert shell.experiment == ExperimentState.CANCELED
    shell.continued()
    assert shell.driver.runnable_trials() == [second]
    shell.apply(shell.driver.kill_trial(third))
    assert shell.trials[third].state == TrialState.CANCELED
    assert shell.outcomes[third] == TrialOutcome.KILLED
    assert shell.experiment == ExperimentState.ACTIVE
    run_attempt(shell, second, TrialOutcome.COMPLETED, None)
    assert shell.experiment == ExperimentState.COMPLETED
    assert shell.trials[third].state == TrialState.CANCELED
    exits = [
        (e["request_id"], e["reason"]) for e in shell.events if e["kind"] == "trial_exited_early"
    ]
    assert exits == [(3, "USER_CANCELED")]


@settings(max_examples=60)
@given(
    searcher=st.sampled_from([{"name": "grid"}, {"name": "random", "max_trials": 4}]),
    limit=st.sampled_from([0, 1, 2]),
    before=st.lists(ATTEMPTS, min_size=0, max_size=8),
    after=st.lists(ATTEMPTS, min_size=1, max_size=20),
    kill_waiting=st.booleans(),
    rebuild_every=st.integers(1, 4),
)
def test_any_canceled_search_continued_ends_with_each_request_once(
    searcher: dict[str, Any],
    limit: int,
    before: list[tuple[TrialOutcome, TrialError | None]],
    after: list[tuple[TrialOutcome, TrialError | None]],
    kill_waiting: bool,
    rebuild_every: int,
) -> None:
    """Any run of a grid or random search, canceled after some attempts, then continued
    (and rebuilt from its store along the way): the trials that had COMPLETED never run
    again and keep their ids, no request id gets two trials, and the search ends by the
    rules with every grid point or ``max_trials`` valid random draws."""
    cfg = config({**searcher, "max_concurrent_trials": limit}, units=[1, 2, 3, 4])
    shell = start(cfg)
    for outcome, error in before:
        runnable = shell.driver.runnable_trials()
        if shell.driver.finished or not runnable:
            break
        if (outcome, error) == CRASH:
            crash_after_checkpoint(shell, runnable[0])
        else:
            run_attempt(shell, runnable[0], outcome, error)
    if not shell.driver.finished:
        shell.user(ExperimentState.STOPPING_CANCELED)
    if shell.experiment == ExperimentState.COMPLETED and all(
        r.state == TrialState.COMPLETED for r in shell.trials.values()
    ):
        return  # the master refuses to continue it (409)
    completed = {t for t, r in shell.trials.items() if r.state == TrialState.COMPLETED}
    old = {t: r.request_id for t, r in shell.trials.items()}
    shell.continued()
    if kill_waiting:
        waiting = [
            t
            for t, r in shell.trials.items()
            if r.state == TrialState.ACTIVE and t not in shell.driver.runnable_trials()
        ]
        for trial_id in waiting[:1]:
            shell.apply(shell.driver.kill_trial(trial_id))
            assert shell.trials[trial_id].state == TrialState.CANCELED
    ran: set[int] = set()
    step = 0
    while not shell.driver.finished:
        runnable = shell.driver.runnable_trials()
        assert runnable, "a live experiment always has a trial to run"
        trial_id = runnable[0]
        ran.add(trial_id)
        outcome, error = after[step % len(after)] if step < 60 else (TrialOutcome.COMPLETED, None)
        if (outcome, error) == CRASH:
            crash_after_checkpoint(shell, trial_id)
        else:
            run_attempt(shell, trial_id, outcome, error)
        step += 1
        if step % rebuild_every == 0 and not shell.driver.finished:
            shell.driver = shell.rebuilt()
            shell.apply(shell.driver.start())
        assert step < 200
    assert shell.experiment in (ExperimentState.COMPLETED, ExperimentState.ERROR)
    assert not ran & completed
    assert {t: shell.trials[t].request_id for t in old} == old
    requests = [r.request_id for r in shell.trials.values()]
    assert sorted(requests) == list(range(1, len(requests) + 1))
    assert all(r.state.is_terminal for r in shell.trials.values())
    if searcher["name"] == "grid":
        assert sorted(r.hparams["units"] for r in shell.trials.values()) == [1, 2, 3, 4]
    elif shell.experiment == ExperimentState.COMPLETED:
        valid = [
            r
            for r in shell.trials.values()
            if shell.outcomes.get(r.trial_id) != TrialOutcome.INVALID_HP
        ]
        assert len(valid) == 4
