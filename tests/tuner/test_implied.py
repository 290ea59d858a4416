"""Which configs leave their searcher to a KerasTuner script, read without running anything,
and the examples per epoch read from a search's training data."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from pedl.tuner import SEARCH_METHOD, implied_config, wants_implied_searcher
from pedl.tuner._capture import SearchCall
from pedl.tuner._describe import training_records
from pedl.tuner._implied import imports_keras_tuner, script_of, tuner_script


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("import keras_tuner\n", True),
        ("import keras_tuner as kt\n", True),
        ("from keras_tuner import RandomSearch\n", True),
        ("from keras_tuner.tuners import Hyperband\n", True),
        ("import kerastuner\n", True),
        ("def f():\n    import keras_tuner\n", True),
        ("import keras\n# import keras_tuner\n", False),
        ("from . import keras_tuner\n", False),  # a module of the model definition
        ("s = 'import keras_tuner'\n", False),
        ("import keras_tuner_extra\n", False),
        ("def (:\n", False),  # not Python: its own run says why
    ],
)
def test_imports_keras_tuner(source: str, expected: bool) -> None:
    assert imports_keras_tuner(source) is expected


@pytest.mark.parametrize(
    ("document", "expected"),
    [
        ({"entrypoint": "python3 search.py"}, True),
        ({"entrypoint": "python3 search.py", "searcher": None}, True),
        ({"searcher": {"name": "custom", "search_method": SEARCH_METHOD}}, True),
        ({"searcher": {"name": "custom", "search_method": SEARCH_METHOD, "metric": "m"}}, False),
        ({"searcher": {"name": "custom", "search_method": "my:Search"}}, False),
        ({"searcher": {"name": "single", "metric": "val_loss"}}, False),
        ({"searcher": {"name": "single"}}, False),  # its validation names the metric
        ({"searcher": "random"}, False),
    ],
)
def test_wants_implied_searcher(document: dict[str, Any], expected: bool) -> None:
    assert wants_implied_searcher(document) is expected


def test_script_of() -> None:
    assert script_of("python3 search.py --tuner grid") == ("search.py", ("--tuner", "grid"))
    assert script_of("search.py") == ("search.py", ())
    assert script_of("model_def:MyTrial") is None
    assert script_of("python3 -c 'x") is None


def test_only_a_script_importing_keras_tuner_implies_a_searcher(tmp_path: Path) -> None:
    """Nothing runs for a config whose script has no KerasTuner, names a searcher, or is a
    Trial class: implied_config answers None at once."""
    (tmp_path / "train.py").write_text("import keras\n")
    (tmp_path / "search.py").write_text("import keras_tuner\n")
    assert implied_config({"entrypoint": "python3 train.py"}, tmp_path) is None
    assert implied_config({"entrypoint": "model_def:MyTrial"}, tmp_path) is None
    (tmp_path / "code").mkdir()
    outside = {"entrypoint": "python3 ../search.py"}  # not in the model definition
    assert implied_config(outside, tmp_path / "code") is None
    named = {"entrypoint": "python3 search.py", "searcher": {"name": "single", "metric": "m"}}
    assert implied_config(named, tmp_path) is None
    assert tuner_script({"entrypoint": "python3 search.py"}, tmp_path) == tmp_path / "search.py"
    assert tuner_script({"entrypoint": "python3 missing.py"}, tmp_path) is None


def call(*args: Any, **kwargs: Any) -> SearchCall:
    return SearchCall(tuner=None, args=args, kwargs=kwargs)


def test_training_records() -> None:
    x = np.zeros((512, 8, 8))
    assert training_records(call(x, np.zeros(512))) == 512
    assert training_records(call(x=x)) == 512
    assert training_records(call(x, validation_split=0.25)) == 384
    assert training_records(call(x, validation_split=0.3)) == 358  # Keras's floor
    assert training_records(call([x, np.zeros((512, 3))])) == 512
    assert training_records(call({"image": x})) == 512
    assert training_records(call(iter([x]))) is None
    assert training_records(call()) is None
