"""Custom searchers: RemoteSearchMethod with a real searcher process (no mocks).

A search method written with Determined's names (``from pedl import searcher``) lives in a
model definition; the proxy forwards every call to ``python -m pedl.searcher._host``, which
imports and constructs it. Failures of every kind (the user's exception, a hang, a crash,
garbage on the pipe, wrong return values) end as a CustomSearcherError that names the cause.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import textwrap
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

import pedl.searcher as searcher
from pedl import model_def
from pedl.config import ExperimentConfig
from pedl.engine import Action, CreateTrial, ExperimentDriver, SetExperimentState
from pedl.searcher import (
    CloseTrial,
    Create,
    CustomSearcherError,
    ExitedReason,
    NewTrial,
    RemoteSearchMethod,
    SearcherRunner,
    SearcherState,
    Shutdown,
    TrainTrial,
    ValidateAfter,
)
from pedl.vocabulary import ExperimentState
from tests.waits import scaled

TRIAL = """
import pedl
from .search import RandomSearchMethod


class Trial(pedl.Trial):
    pass
"""

# Written as Determined's examples are, with the import renamed.
SEARCH = """
import json
import os
import random
import uuid
from pathlib import Path

from pedl import searcher


class RandomSearchMethod(searcher.SearchMethod):
    def __init__(self, max_trials: int = 3, max_length: int = 20, seed: int = 7) -> None:
        self.max_trials = max_trials
        self.max_length = max_length
        self.rng = random.Random(seed)
        self.created = 0
        self.closed = set()
        self.exits = {}

    def _create(self):
        self.created += 1
        create = searcher.Create(
            request_id=uuid.uuid4(),
            hparams={"lr": self.rng.uniform(0.001, 0.1), "n": self.created},
            checkpoint=None,
        )
        validate = searcher.ValidateAfter(request_id=create.request_id, length=self.max_length)
        return [create, validate]

    def initial_operations(self, searcher_state):
        print("initial_operations: a print must not break the protocol")
        return self._create() + self._create()

    def on_trial_created(self, searcher_state, request_id):
        assert request_id in searcher_state.trials_created
        return []

    def on_validation_completed(self, searcher_state, request_id, metric, train_length):
        return [searcher.Close(request_id=request_id)]

    def on_trial_closed(self, searcher_state, request_id):
        self.closed.add(request_id)
        if self.created < self.max_trials:
            return self._create()
        if len(self.closed) == self.created:
            return [searcher.Shutdown()]
        return []

    def on_trial_exited_early(self, searcher_state, request_id, exited_reason):
        self.exits[str(request_id)] = exited_reason.name
        assert exited_reason in (searcher.ExitedReason.ERRORED, searcher.ExitedReason.INVALID_HP)
        return []

    def progress(self, searcher_state):
        return len(self.closed) / self.max_trials

    def save_method_state(self, path: Path) -> None:
        state = {"created": self.created, "exits": self.exits, "rng": self.rng.getstate()}
        (path / "method_state.json").write_text(json.dumps(state))

    def load_method_state(self, path: Path) -> None:
        state = json.loads((path / "method_state.json").read_text())
        self.created, self.exits = state["created"], state["exits"]
        version, internal, gauss = state["rng"]
        self.rng.setstate((version, tuple(internal), gauss))
"""


def make_model(tmp_path: Path, files: dict[str, str] | None = None) -> Path:
    """A model definition directory: a Trial in __init__.py and the search in search.py."""
    model = tmp_path / "model"
    model.mkdir()
    for name, text in {"__init__.py": TRIAL, "search.py": SEARCH, **(files or {})}.items():
        (model / name).write_text(textwrap.dedent(text))
    return model


def config(**fields: Any) -> ExperimentConfig:
    return ExperimentConfig.model_validate(
        {
            "searcher": {"name": "custom", "metric": "loss", **fields},
            "hyperparameters": {"lr": 0.1},
            "reproducibility": {"experiment_seed": 5},
        }
    )


def remote(model: Path, cfg: ExperimentConfig | None = None, **kwargs: Any) -> RemoteSearchMethod:
    return RemoteSearchMethod(cfg or config(), code_dir=model, **kwargs)


def failure(method: RemoteSearchMethod) -> str:
    with pytest.raises(CustomSearcherError) as info:
        method.initial_operations(SearcherState())
    return str(info.value)


def alive(pid: int) -> bool:
    """Whether process ``pid`` runs (a zombie, dead but not yet reaped, does not)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def wait_gone(pid: int, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + scaled(timeout)
    while time.monotonic() < deadline:
        if not alive(pid):
            return True
        time.sleep(0.05)
    return False


# the search runs in its own process ------------------------------------------------------------


def test_a_determined_style_search_runs_to_shutdown_in_its_own_process(tmp_path: Path) -> None:
    with remote(make_model(tmp_path)) as method:
        assert method.failure is None
        assert method.searcher_class == "model_def.search.RandomSearchMethod"
        assert method.pid != os.getpid()
        runner = SearcherRunner(method, seed=5, max_length=20)
        ops = runner.initial_operations()
        assert [type(op) for op in ops] == [NewTrial, TrainTrial, NewTrial, TrainTrial]
        assert [op.hparams["n"] for op in ops if isinstance(op, NewTrial)] == [1, 2]
        assert runner.progress() == 0.0
        for request_id in (1, 2):
            assert runner.on_trial_created(request_id) == []
        assert runner.on_validation_completed(1, 0.5, 20) == [CloseTrial(1)]
        third = runner.on_trial_closed(1)
        assert [type(op) for op in third] == [NewTrial, TrainTrial]
        assert runner.progress() == pytest.approx(1 / 3)
        assert runner.on_trial_created(3) == []
        assert runner.on_trial_exited_early(2, ExitedReason.ERRORED) == []
        assert runner.on_trial_closed(2) == []
        runner.on_validation_completed(3, 0.1, 20)
        assert runner.on_trial_closed(3) == [Shutdown()]
        assert runner.is_shut_down
        assert runner.progress() == 1.0
        pid = method.pid
    assert wait_gone(pid)


def test_the_searcher_process_unpacks_an_archive_and_removes_it_on_close(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    archive = model_def.package(make_model(tmp_path))
    temp = tmp_path / "temp"
    temp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    method = RemoteSearchMethod(config(search_method="search:RandomSearchMethod"), archive=archive)
    ops = method.initial_operations(SearcherState())
    assert isinstance(ops[0], Create) and ops[0].hparams["n"] == 1
    assert method.searcher_class == "search.RandomSearchMethod"
    (workdir,) = temp.iterdir()
    assert (workdir / "code" / "search.py").is_file()
    method.close()
    assert list(temp.iterdir()) == []
    with pytest.raises(CustomSearcherError, match="stopped"):
        method.initial_operations(SearcherState())


def test_replaying_the_event_log_into_a_new_process_restores_the_search(tmp_path: Path) -> None:
    """After a master restart the runner replays the log into a fresh process: a seeded
    searcher makes the same trials and owes the same operations, whatever its uuids."""
    model = make_model(tmp_path)
    with remote(model) as first:
        runner = SearcherRunner(first, seed=5, max_length=20)
        runner.initial_operations()
        runner.on_trial_created(1)
        runner.on_trial_created(2)
        runner.on_validation_completed(1, 0.5, 20)
        runner.on_trial_closed(1)
        events, outstanding = runner.events, runner.outstanding_operations
    with remote(model) as second:
        restored = SearcherRunner.restore(second, events, seed=5, max_length=20)
        assert restored.outstanding_operations == outstanding
        assert restored.searcher_state.to_dict()["lastEventId"] == len(events)
        assert restored.on_trial_created(3) == []


def test_save_and_load_go_to_the_searcher_process(tmp_path: Path) -> None:
    model = make_model(tmp_path)
    state = SearcherState(trials_created={uuid.uuid4()}, last_event_id=4)
    with remote(model) as first:
        first.initial_operations(state)
        first.save(state, tmp_path / "saved", experiment_id=7)
    assert (tmp_path / "saved" / "method_state.json").is_file()
    with remote(model) as second:
        assert second.load(tmp_path / "saved") == (state, 7)
        ops = second.on_trial_closed(state, uuid.uuid4())  # created = 2 was loaded: a third
        assert [op.hparams["n"] for op in ops if isinstance(op, Create)] == [3]


def test_a_constructor_with_a_parameter_gets_the_experiment_config(tmp_path: Path) -> None:
    search = """
        from pedl import searcher
        from search import RandomSearchMethod


        class FromConfig(RandomSearchMethod):
            def __init__(self, config):
                super().__init__(max_trials=1, max_length=config.searcher.max_length.value,
                                 seed=config.reproducibility.experiment_seed)
    """
    model = make_model(tmp_path, {"configured.py": search})
    cfg = config(search_method="configured:FromConfig", max_length={"batches": 7})
    with remote(model, cfg) as method:
        ops = method.initial_operations(SearcherState())
        assert [op.length for op in ops if isinstance(op, ValidateAfter)] == [7, 7]


# which class ------------------------------------------------------------------------------------


def test_the_class_named_alone_is_looked_up_in_the_entrypoints_module(tmp_path: Path) -> None:
    with remote(make_model(tmp_path), config(search_method="RandomSearchMethod")) as method:
        assert method.searcher_class == "model_def.search.RandomSearchMethod"


OTHER = "\nclass Other(RandomSearchMethod):\n    pass\n"


def test_by_default_a_class_defined_in_the_module_wins_over_an_imported_one(
    tmp_path: Path,
) -> None:
    with remote(make_model(tmp_path, {"__init__.py": TRIAL + OTHER})) as method:
        assert method.searcher_class == "model_def.Other"


@pytest.mark.parametrize(
    ("files", "search_method", "expected"),
    [
        (
            {"__init__.py": TRIAL + OTHER + "\nclass Another(Other):\n    pass\n"},
            None,
            "has 3 concrete pedl.searcher.SearchMethod subclasses (model_def.Another, "
            "model_def.Other, model_def.search.RandomSearchMethod); name one with "
            'searcher.search_method: "module:Class"',
        ),
        (
            {"__init__.py": "import pedl\nclass Trial(pedl.Trial):\n    pass\n"},
            None,
            "has no concrete pedl.searcher.SearchMethod subclasses (none)",
        ),
        ({}, "search:Missing", "has no attribute 'Missing'"),
        ({}, "search:uuid", "which is not a subclass of pedl.searcher.SearchMethod"),
        ({}, "search:searcher.SearchMethod", "names the abstract class SearchMethod"),
        ({}, "nowhere:Thing", "ModuleNotFoundError: No module named 'nowhere'"),
    ],
)
def test_a_search_method_that_cannot_be_found_fails_at_the_first_call(
    tmp_path: Path, files: dict[str, str], search_method: str | None, expected: str
) -> None:
    with remote(make_model(tmp_path, files), config(search_method=search_method)) as method:
        assert method.failure is not None
        message = failure(method)
    assert message.startswith("the custom searcher could not start: ")
    assert expected in message


def test_an_error_importing_the_searcher_names_its_file_and_line(tmp_path: Path) -> None:
    broken = "import os\n\nvalue = 1 / 0\n"
    model = make_model(tmp_path, {"broken.py": broken})
    with remote(model, config(search_method="broken:Search")) as method:
        message = failure(method)
    assert "ZeroDivisionError: division by zero (broken.py:3, in <module>)" in message


def test_an_error_in_the_constructor_names_its_file_and_line(tmp_path: Path) -> None:
    search = """
        from search import RandomSearchMethod


        class Picky(RandomSearchMethod):
            def __init__(self):
                raise KeyError("needs a budget")
    """
    model = make_model(tmp_path, {"picky.py": search})
    with remote(model, config(search_method="picky:Picky")) as method:
        message = failure(method)
    assert "KeyError: 'needs a budget' (picky.py:7, in __init__)" in message


# failures ---------------------------------------------------------------------------------------

FAILING = """
    import os
    import sys
    import time

    from search import RandomSearchMethod


    class Failing(RandomSearchMethod):
        def on_trial_created(self, searcher_state, request_id):
            mode = os.environ["PEDL_TEST_FAIL"]
            if mode == "raise":
                raise ValueError(f"no room for {len(searcher_state.trials_created)} trials")
            if mode == "hang":
                time.sleep(3600)
            if mode == "crash":
                print("about to crash", file=sys.stderr)
                os._exit(7)
            if mode == "none":
                return None
            if mode == "not-an-op":
                return ["close it"]
            if mode == "not-json":
                return [self._create()[0].__class__(request_id, {"s": {1, 2}})]
            if mode == "many":
                return [self._create()[1]] * 10_001
            return []

        def progress(self, searcher_state):
            if os.environ["PEDL_TEST_FAIL"] == "progress":
                raise RuntimeError("progress broke")
            self.asked = getattr(self, "asked", 0) + 1
            return self.asked / 100
"""


@pytest.fixture
def failing_model(tmp_path: Path) -> Path:
    return make_model(tmp_path, {"failing.py": FAILING})


def failing(
    model: Path, mode: str, monkeypatch: pytest.MonkeyPatch, **kwargs: Any
) -> RemoteSearchMethod:
    monkeypatch.setenv("PEDL_TEST_FAIL", mode)
    return remote(model, config(search_method="failing:Failing"), **kwargs)


class _Shell:
    """Carries out a driver's actions the way a store does (trial ids from 101)."""

    def __init__(self, driver: ExperimentDriver) -> None:
        self.driver = driver
        self.state = ExperimentState.ACTIVE
        self.error: str | None = None
        self.next_id = 100

    def apply(self, actions: list[Action]) -> None:
        for action in actions:
            if isinstance(action, CreateTrial):
                self.next_id += 1
                self.apply(self.driver.trial_created(action.request_id, self.next_id))
            elif isinstance(action, SetExperimentState):
                self.state, self.error = action.state, action.error


def test_a_users_exception_ends_the_experiment_with_its_type_message_and_line(
    failing_model: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with failing(failing_model, "raise", monkeypatch) as method:
        shell = _Shell(ExperimentDriver(config(), search_method=method))
        shell.apply(shell.driver.start())
        assert shell.state == ExperimentState.ERROR
        assert shell.error == (
            "the searcher failed: CustomSearcherError: the custom searcher's on_trial_created "
            "raised ValueError: no room for 1 trials (failing.py:13, in on_trial_created)"
        )
        assert "Traceback" in (method.failure.traceback if method.failure else "")
        assert wait_gone(method.pid)


def test_a_searcher_that_cannot_start_ends_the_experiment_not_its_shell(tmp_path: Path) -> None:
    with remote(make_model(tmp_path), config(search_method="search:Missing")) as method:
        shell = _Shell(ExperimentDriver(config(), search_method=method))
        shell.apply(shell.driver.start())
    assert shell.state == ExperimentState.ERROR
    assert shell.error is not None
    assert shell.error.startswith(
        "the searcher failed: CustomSearcherError: the custom searcher could not start: "
        "SearcherError: searcher.search_method 'search:Missing': the module 'search' "
    )


def test_a_hung_searcher_times_out_and_its_process_is_stopped(
    failing_model: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with failing(failing_model, "hang", monkeypatch, call_timeout=1.0) as method:
        method.initial_operations(SearcherState())
        started = time.monotonic()
        with pytest.raises(CustomSearcherError) as info:
            method.on_trial_created(SearcherState(), uuid.uuid4())
        assert time.monotonic() - started < 5
        assert str(info.value) == (
            "the custom searcher did not answer on_trial_created within 1 s; its process was "
            "stopped"
        )
        assert wait_gone(method.pid)
        with pytest.raises(CustomSearcherError, match="did not answer"):  # the same, again
            method.on_trial_closed(SearcherState(), uuid.uuid4())


def test_a_crashed_searcher_reports_its_exit_and_last_output(
    failing_model: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with failing(failing_model, "crash", monkeypatch) as method:
        method.initial_operations(SearcherState())
        with pytest.raises(CustomSearcherError) as info:
            method.on_trial_created(SearcherState(), uuid.uuid4())
    message = str(info.value)
    assert message.startswith(
        "the custom searcher's process exited with code 7 during on_trial_created; its last "
        "output: "
    )
    assert message.endswith(" | about to crash")


def test_a_killed_searcher_is_reported_by_signal(
    failing_model: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with failing(failing_model, "ok", monkeypatch) as method:
        os.kill(method.pid, 9)
        with pytest.raises(CustomSearcherError, match="process was killed by SIGKILL during"):
            method.initial_operations(SearcherState())


@pytest.mark.parametrize(
    ("mode", "expected"),
    [
        (
            "none",
            "TypeError: Failing.on_trial_created: it returned None, not a list of operations "
            "(failing.py:10, in on_trial_created)",
        ),
        (
            "not-an-op",
            "TypeError: Failing.on_trial_created: it returned 'close it', which is not an "
            "operation (Create, ValidateAfter, Close, Progress, Shutdown) (failing.py:10",
        ),
        (
            "not-json",
            "TypeError: Failing.on_trial_created: its operations are not JSON data: Object of "
            "type set is not JSON serializable (failing.py:10",
        ),
        (
            "many",
            "ValueError: Failing.on_trial_created: it returned 10001 operations, more than the "
            "limit of 10000 per call (failing.py:10",
        ),
    ],
)
def test_wrong_return_values_are_reported_at_the_handler(
    failing_model: Path, monkeypatch: pytest.MonkeyPatch, mode: str, expected: str
) -> None:
    with failing(failing_model, mode, monkeypatch) as method:
        method.initial_operations(SearcherState())
        with pytest.raises(CustomSearcherError) as info:
            method.on_trial_created(SearcherState(), uuid.uuid4())
    assert str(info.value).startswith("the custom searcher's on_trial_created raised ")
    assert expected in str(info.value)


def test_progress_never_raises_and_its_failure_ends_the_next_event(
    failing_model: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with failing(failing_model, "progress", monkeypatch) as method:
        state = SearcherState()
        method.initial_operations(state)
        state.last_event_id = 1
        assert method.progress(state) == 0.0
        with pytest.raises(
            CustomSearcherError, match="progress raised RuntimeError: progress broke"
        ):
            method.on_trial_created(state, uuid.uuid4())


def test_progress_is_asked_once_per_event(
    failing_model: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The searcher counts the times it was asked: the same state is answered from the cache."""
    with failing(failing_model, "ok", monkeypatch) as method:
        state = SearcherState(last_event_id=1)
        assert [method.progress(state) for _ in range(3)] == [0.01] * 3
        state.last_event_id = 2
        assert [method.progress(state) for _ in range(3)] == [0.02] * 3
        state.experiment_completed = True
        assert method.progress(state) == 0.03


GARBAGE = """
import sys

sys.stdin.buffer.readline()
sys.stdout.write('{{"ready": {{"class": "fake.Fake", "pid": 1}}}}\\n')
sys.stdout.flush()
sys.stdin.buffer.readline()
sys.stdout.write({answer!r})
sys.stdout.flush()
sys.stdin.buffer.readline()
"""


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ("this is not json\n", "answered initial_operations with garbage: not JSON"),
        ('{"id": 99, "result": []}\n', "answered initial_operations out of turn"),
        ('{"id": 1, "result": 3}\n', "answered initial_operations with 3"),
        ('{"id": 1, "result": [{"type": "explode"}]}\n', "Unknown operation type 'explode'"),
        ('{"id": 1, "result": [{"type": "close"}]}\n', "Malformed operation record"),
        ('{"id": 1, "error": "bad"}\n', "answered garbage: not an error record"),
        ("x" * (17 * 1024 * 1024), "an answer longer than 16777216 bytes"),
    ],
)
def test_an_answer_that_breaks_the_protocol_fails_the_searcher(
    tmp_path: Path, answer: str, expected: str
) -> None:
    script = tmp_path / "garbage.py"
    script.write_text(GARBAGE.format(answer=answer))
    model = make_model(tmp_path)
    with remote(model, command=[sys.executable, str(script)], call_timeout=20) as method:
        assert method.searcher_class == "fake.Fake"
        with pytest.raises(CustomSearcherError) as info:
            method.initial_operations(SearcherState())
    assert expected in str(info.value)


def test_the_searcher_process_exits_when_its_parent_dies(
    failing_model: Path, tmp_path: Path
) -> None:
    """Even while the user's code hangs, the searcher process does not outlive the master
    (killed outright, here with the archive it was given), and removes the master's files."""
    archive = tmp_path / "archive"
    archive.write_bytes(model_def.package(failing_model))
    parent = f"""
import os, pathlib, sys, threading, time
from pedl.config import ExperimentConfig
from pedl.searcher import RemoteSearchMethod, SearcherState
config = ExperimentConfig.model_validate(
    {{"searcher": {{"name": "custom", "metric": "loss", "search_method": "failing:Failing"}}}}
)
archive = pathlib.Path({str(archive)!r}).read_bytes()
method = RemoteSearchMethod(config, archive=archive)
method.initial_operations(SearcherState())
print(method.pid, flush=True)
threading.Thread(
    target=lambda: method.on_trial_created(SearcherState(), __import__("uuid").uuid4()),
    daemon=True,
).start()
time.sleep(0.5)
os._exit(0)
"""
    temp = tmp_path / "temp"
    temp.mkdir()
    env = {**os.environ, "PEDL_TEST_FAIL": "hang", "TMPDIR": str(temp)}
    out = subprocess.run(
        [sys.executable, "-c", parent], env=env, capture_output=True, text=True, timeout=scaled(60)
    )
    assert out.returncode == 0, out.stderr
    pid = int(out.stdout.split()[0])
    assert wait_gone(pid)
    assert list(temp.iterdir()) == []


def test_determined_names_are_importable_as_a_determined_user_writes_them() -> None:
    request_id = uuid.uuid4()
    create = searcher.Create(request_id=request_id, hparams={"lr": 0.1}, checkpoint=None)
    assert create.request_id == request_id and create.hparams == {"lr": 0.1}
    assert searcher.ValidateAfter(request_id=request_id, length=10).length == 10
    assert searcher.Close(request_id=request_id).request_id == request_id
    assert searcher.Shutdown() == searcher.Shutdown(cancel=False, failure=False)
    assert {"ERRORED", "USER_CANCELED", "INVALID_HP"} <= set(searcher.ExitedReason.__members__)
    assert searcher.SearcherState().to_dict()["trialsCreated"] == []
    assert issubclass(searcher.RemoteSearchMethod, searcher.SearchMethod)
