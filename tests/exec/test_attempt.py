"""``run_attempt``: every way a trial can end, classified, with the user's file and line.

The Keras cases run real tiny models (``failing_model/model.py``, which fails where its
hyperparameters say); the model definitions that cannot load are written per test. A missing
TensorFlow is simulated in a subprocess that blocks its import.
"""

from __future__ import annotations

import json
import logging
import re
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pedl import InvalidHP, core, model_def
from pedl.config import parse_config
from pedl.exec import AttemptResult, MasterError, classify_failure, run_attempt
from pedl.storage import SharedFSStorage
from pedl.vocabulary import TrialOutcome, user_location
from tests.waits import scaled

FAILING_MODEL = Path(__file__).parent / "failing_model"
REPO = Path(__file__).parents[2]

CONFIG = """
hyperparameters:
  global_batch_size: 16
searcher:
  name: single
  metric: val_accuracy
  smaller_is_better: false
  max_length: {batches: 12}
scheduling_unit: 5
min_checkpoint_period: {batches: 5}
reproducibility: {experiment_seed: 1}
"""


class Platform:
    """The in-memory platform side of one attempt: its backend (the recorder), storage."""

    def __init__(self, tmp_path: Path, code_dir: Path, hparams: dict[str, Any]) -> None:
        self.code_dir = code_dir
        self.hparams = {"global_batch_size": 16, **hparams}
        self.recorder = core.MemoryBackend([12])
        self.backend: core.TrialBackend = self.recorder
        self.storage = SharedFSStorage(tmp_path / "checkpoints")
        self.contexts = 0

    def build_context(self) -> core.Context:
        self.contexts += 1
        config = parse_config(CONFIG)
        info = core.TrialInfo(
            trial_id=1,
            experiment_id=1,
            hparams=self.hparams,
            trial_seed=1,
            config=config,
            code_dir=self.code_dir,
        )
        return core.build_context(
            info,
            backend=self.backend,
            storage=self.storage,
        )

    def attempt(self, entrypoint: str | None = None) -> AttemptResult:
        return run_attempt(self.code_dir, entrypoint, self.build_context)


def failing_model(tmp_path: Path, **hparams: Any) -> Platform:
    code_dir = tmp_path / "code"
    shutil.copytree(FAILING_MODEL, code_dir, ignore=shutil.ignore_patterns("__pycache__"))
    return Platform(tmp_path, code_dir, hparams)


def written_model(tmp_path: Path, source: str, **files: str) -> Platform:
    code_dir = tmp_path / "code"
    code_dir.mkdir()
    (code_dir / "model.py").write_text(textwrap.dedent(source))
    for name, text in files.items():
        (code_dir / name).write_text(text)
    return Platform(tmp_path, code_dir, {})


def line_of(path: Path, marker: str) -> str:
    """``file.py:LINE`` of the one line of ``path`` that contains ``marker``."""
    (line,) = [i for i, text in enumerate(path.read_text().splitlines(), 1) if marker in text]
    return f"{path.name}:{line}"


# A trial that runs to the end --------------------------------------------------------------


def test_a_trial_that_trains_to_the_end_completes_and_logs_each_validation(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    platform = failing_model(tmp_path)
    with caplog.at_level(logging.INFO, logger="pedl.keras"):
        result = platform.attempt()
    assert result == AttemptResult(TrialOutcome.COMPLETED, None, "train")
    assert platform.recorder.completed[0][0] == 12
    validations = platform.recorder.batches("validation")
    lines = [r for r in caplog.records if r.getMessage().startswith("validation at batch")]
    assert [r.levelno for r in lines] == [logging.INFO] * len(validations)
    number = r"-?\d+(\.\d+)?(e[+-]\d+)?"
    for record, batch in zip(lines, validations, strict=True):
        text = record.getMessage()
        assert re.fullmatch(
            rf"validation at batch {batch}: val_accuracy {number}, val_loss {number}", text
        ) or re.fullmatch(
            rf"validation at batch {batch}: val_loss {number}, val_accuracy {number}", text
        ), text
        shown = dict(pair.split(" ") for pair in text.split(": ", 1)[1].split(", "))
        reported = platform.recorder.metrics[("validation", batch)]
        assert shown == {k: f"{v:.4g}" for k, v in reported.items()}


def test_a_stop_request_ends_the_trial_stopped_early_at_the_next_batch(tmp_path: Path) -> None:
    platform = failing_model(tmp_path, stop_at=3)
    result = platform.attempt()
    assert result == AttemptResult(TrialOutcome.STOPPED_EARLY, None, "train")
    assert platform.recorder.batches("validation") == [3]
    assert [batches for _, batches in platform.recorder.checkpoints] == [3]
    # The controller does not tell the searcher; the engine does, from the outcome.
    assert (platform.recorder.completed, platform.recorder.lengths) == ([], [12])


# Failures in the trial's code --------------------------------------------------------------

# place -> (stage, before_progress, batches checkpointed before the failure)
PLACES = {
    "init": ("build", True, []),
    "build_model": ("build", True, []),
    "training_data": ("build", True, []),
    "loss": ("train", True, []),
    "first_batch": ("train", True, []),
    "second_batch": ("train", False, []),
    "after_checkpoint": ("train", False, [5]),
}


@pytest.mark.parametrize("place", PLACES)
def test_an_error_in_the_trial_is_described_where_it_was_raised(tmp_path: Path, place: str) -> None:
    platform = failing_model(tmp_path, fail=place, error="value")
    result = platform.attempt()
    stage, before_progress, checkpointed = PLACES[place]
    assert (result.outcome, result.stage) == (TrialOutcome.ERRORED, stage)
    error = result.error
    assert error is not None
    assert (error.type, error.message) == ("ValueError", f"{place} failed on purpose")
    assert error.location == line_of(platform.code_dir / "model.py", f"# fail: {place}")
    assert error.before_progress is before_progress
    assert error.summary() == f"ValueError: {place} failed on purpose ({error.location})"
    assert "ValueError: " in error.traceback and "model.py" in error.traceback
    assert [batches for _, batches in platform.recorder.checkpoints] == checkpointed


@pytest.mark.parametrize("place", PLACES)
def test_invalid_hp_raised_anywhere_in_the_trial_ends_it_invalid_hp(
    tmp_path: Path, place: str
) -> None:
    platform = failing_model(tmp_path, fail=place, error="invalid_hp")
    result = platform.attempt()
    stage, before_progress, _ = PLACES[place]
    assert (result.outcome, result.stage) == (TrialOutcome.INVALID_HP, stage)
    error = result.error
    assert error is not None
    assert error.type == "InvalidHP"
    assert error.message.startswith(f"{place}: these hyperparameters do not work")
    assert error.location == line_of(platform.code_dir / "model.py", f"# fail: {place}")
    assert error.before_progress is before_progress


# Model definitions that cannot load ---------------------------------------------------------

LOAD_FAILURES: dict[str, tuple[str, dict[str, str], str | None, str, str, int | None]] = {
    # name: (model.py, other files, entrypoint, error type, message part, line in model.py)
    "syntax error": (
        "import pedl\n\ndef broken(:\n    pass\n",
        {},
        None,
        "SyntaxError",
        "line 3",
        3,
    ),
    "missing package": (
        "import pedl\nimport no_such_package_for_pedl_tests\n",
        {},
        None,
        "ModuleNotFoundError",
        "No module named 'no_such_package_for_pedl_tests'",
        2,
    ),
    "error at import": (
        "import pedl\n\nSETTINGS = {}\nSIZE = SETTINGS['size']\n",
        {},
        None,
        "KeyError",
        "'size'",
        4,
    ),
    "no Trial class": (
        "import pedl\n\nclass NotATrial:\n    pass\n",
        {},
        None,
        "ModelDefError",
        "exposes no concrete pedl.Trial subclasses",
        None,
    ),
    "an entrypoint naming no module": (
        "import pedl\n",
        {},
        "missing_module:MyTrial",
        "ModelDefError",
        "Cannot import entrypoint module 'missing_module'",
        None,
    ),
    "a bare pedl.Trial": (
        "import pedl\n\nclass MyTrial(pedl.Trial):\n    pass\n",
        {},
        None,
        "ModelDefError",
        "MyTrial subclasses pedl.Trial directly; subclass a framework's Trial class",
        None,
    ),
}


@pytest.mark.parametrize("case", LOAD_FAILURES)
def test_a_model_definition_that_cannot_load_is_described_before_progress(
    tmp_path: Path, case: str
) -> None:
    source, files, entrypoint, error_type, message, line = LOAD_FAILURES[case]
    platform = written_model(tmp_path, source, **files)
    result = platform.attempt(entrypoint)
    assert (result.outcome, result.stage) == (TrialOutcome.ERRORED, "load")
    error = result.error
    assert error is not None
    assert error.type == error_type
    assert message in error.message
    assert error.location == (f"model.py:{line}" if line is not None else None)
    assert error.before_progress is True
    assert "Original traceback" not in error.message  # the cause, not the loader's wrapper
    assert platform.contexts == 0


def test_invalid_hp_raised_at_import_ends_the_trial_invalid_hp(tmp_path: Path) -> None:
    platform = written_model(
        tmp_path, "import pedl\n\nraise pedl.InvalidHP('this search space is empty')\n"
    )
    result = platform.attempt()
    assert result.outcome is TrialOutcome.INVALID_HP
    assert result.error is not None
    assert (result.error.type, result.error.message) == ("InvalidHP", "this search space is empty")
    assert (result.error.location, result.error.before_progress) == ("model.py:3", True)


MISSING_TENSORFLOW = """
import json, sys
from pathlib import Path

for name in ("tensorflow", "keras", "tf_keras"):
    sys.modules[name] = None  # import fails: ModuleNotFoundError, as when not installed

from pedl.exec import run_attempt

def no_context():
    raise AssertionError("the context is not needed when the model cannot load")

result = run_attempt(Path(sys.argv[1]), None, no_context)
print(json.dumps({"outcome": result.outcome.value, "stage": result.stage,
                  "error": result.error.to_dict()}))
"""


def test_a_missing_tensorflow_says_what_to_install(tmp_path: Path) -> None:
    platform = failing_model(tmp_path)
    done = subprocess.run(
        [sys.executable, "-c", MISSING_TENSORFLOW, str(platform.code_dir)],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=scaled(60),
        check=True,
    )
    answer = json.loads(done.stdout)
    assert (answer["outcome"], answer["stage"]) == ("ERRORED", "load")
    error = answer["error"]
    assert error["type"] == "ModuleNotFoundError"
    assert "import of keras halted" in error["message"]  # the original message, kept
    assert "pip install 'pedl[tf]'" in error["message"]
    assert error["location"] == line_of(platform.code_dir / "model.py", "import keras")
    assert error["before_progress"] is True


# What is not the trial's fault propagates --------------------------------------------------


class MasterGone(core.MemoryBackend):
    """A backend whose master stopped answering."""

    def next_length(self) -> int | None:
        raise MasterError("the master has not answered for 1 s")


def test_a_master_error_is_not_the_trials_fault_and_propagates(tmp_path: Path) -> None:
    platform = failing_model(tmp_path)
    platform.backend = MasterGone()
    with pytest.raises(MasterError, match="has not answered"):
        platform.attempt()


# Classification as pure logic ---------------------------------------------------------------

ERRORS: list[Callable[[str], BaseException]] = [
    ValueError,
    RuntimeError,
    KeyError,
    model_def.ModelDefError,
    lambda m: ModuleNotFoundError(m, name="some_other_package"),
]


def chain(links: list[tuple[int, bool]], innermost: BaseException) -> BaseException:
    """Raise ``innermost``, then each of ``links`` (error kind, chained by ``from``: else
    raised while handling), and return the outermost error."""
    error = innermost
    for kind, explicit in links:
        try:
            try:
                raise error
            except BaseException as inner:
                outer = ERRORS[kind](f"link {kind}")
                if explicit:
                    raise outer from inner
                raise outer  # noqa: B904 - an implicit __context__ on purpose
        except BaseException as raised:
            error = raised
    return error


LINKS = st.lists(st.tuples(st.integers(0, len(ERRORS) - 1), st.booleans()), max_size=4)


@given(LINKS, st.booleans())
def test_invalid_hp_anywhere_in_the_chain_is_invalid_hp(
    links: list[tuple[int, bool]], progressed: bool
) -> None:
    error = chain(links, InvalidHP("bad"))
    result = classify_failure(error, code_dir=None, progressed=progressed)
    assert result.outcome is TrialOutcome.INVALID_HP
    assert result.error is not None
    assert (result.error.type, result.error.message) == ("InvalidHP", "bad")
    assert result.error.before_progress is (not progressed)


@given(LINKS, st.sampled_from(["tensorflow", "keras", "tf_keras", "tensorflow.python"]))
def test_a_missing_framework_anywhere_in_the_chain_says_what_to_install(
    links: list[tuple[int, bool]], name: str
) -> None:
    error = chain(links, ModuleNotFoundError(f"No module named {name!r}", name=name))
    result = classify_failure(error, code_dir=None, progressed=True, stage="train")
    assert result.outcome is TrialOutcome.ERRORED
    assert result.error is not None
    assert result.error.type == "ModuleNotFoundError"
    assert result.error.message.startswith(f"No module named {name!r}: ")
    assert result.error.message.endswith("pip install 'pedl[tf]'")
    assert result.error.before_progress is True


@given(LINKS, st.integers(0, len(ERRORS) - 1), st.booleans())
def test_any_other_error_is_errored_and_described_by_the_outermost(
    links: list[tuple[int, bool]], kind: int, progressed: bool
) -> None:
    error = chain(links, ERRORS[kind]("innermost"))
    result = classify_failure(error, code_dir=None, progressed=progressed, stage="train")
    assert result.outcome is TrialOutcome.ERRORED
    assert result.error is not None
    assert result.error.type == type(error).__name__
    assert result.error.before_progress is (not progressed)
    loading = classify_failure(error, code_dir=None, progressed=True, stage="load")
    assert loading.error is not None and loading.error.before_progress is True


# user_location on synthetic tracebacks ------------------------------------------------------

CODE_DIR = "/nonexistent/pedl-user-code"
FRAMES = st.lists(
    st.tuples(st.booleans(), st.integers(2, 60), st.sampled_from(["model.py", "sub/data.py"])),
    min_size=1,
    max_size=6,
)


def raise_through(frames: list[tuple[bool, int, str]]) -> BaseException:
    """Raise through one function per frame (outermost first), each defined in a file named
    as inside ``CODE_DIR`` or outside it and calling on (or raising) at the given line."""
    call: Callable[[], None] | None = None
    for index, (inside, line, name) in reversed(list(enumerate(frames))):
        filename = f"{CODE_DIR}/{name}" if inside else f"/nonexistent/site-packages/{name}"
        body = "raise ValueError('innermost')" if call is None else "inner()"
        source = "\n" * (line - 2) + f"def frame_{index}():\n    {body}\n"
        namespace: dict[str, Any] = {"inner": call}
        exec(compile(source, filename, "exec"), namespace)
        call = namespace[f"frame_{index}"]
    assert call is not None
    try:
        call()
    except ValueError as error:
        return error
    raise AssertionError("no error")


@given(FRAMES)
def test_user_location_is_the_innermost_frame_under_the_code_dir(
    frames: list[tuple[bool, int, str]],
) -> None:
    error = raise_through(frames)
    inside = [f"{name}:{line}" for is_inside, line, name in frames if is_inside]
    assert user_location(error, CODE_DIR) == (inside[-1] if inside else None)
    assert user_location(error, None) is None


@given(FRAMES, st.integers(1, 500))
def test_user_location_looks_through_the_causes_and_at_syntax_errors(
    frames: list[tuple[bool, int, str]], line: int
) -> None:
    cause = raise_through(frames)
    try:
        raise model_def.ModelDefError("wrapped") from cause
    except model_def.ModelDefError as wrapped:
        inside = [f"{name}:{n}" for is_inside, n, name in frames if is_inside]
        assert user_location(wrapped, CODE_DIR) == (inside[-1] if inside else None)
    syntax = SyntaxError("invalid syntax", (f"{CODE_DIR}/pkg/model.py", line, 1, "x(", line, 2))
    assert user_location(syntax, CODE_DIR) == f"pkg/model.py:{line}"
    outside = SyntaxError("invalid syntax", ("/elsewhere/model.py", line, 1, "x(", line, 2))
    assert user_location(outside, CODE_DIR) is None
