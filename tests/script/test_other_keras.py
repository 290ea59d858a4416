"""The other Keras's ``fit`` refused while a script runs (:mod:`pedl.script._other_keras`),
whether the script imports that package during its run or it was imported before."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pedl.script._other_keras import other_keras_fit_refused

PACKAGE = """
class Model:
    def fit(self, *args, **kwargs):
        return "trained"

class Theirs(Model):
    pass
"""


@pytest.fixture
def package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A package named like no other, with a Model class, importable but not imported."""
    name = f"other_keras_{tmp_path.name.replace('-', '_')}"
    (tmp_path / f"{name}.py").write_text(PACKAGE)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield name
    sys.modules.pop(name, None)


def _why(model: Any) -> str | None:
    return "it is theirs" if type(model).__name__ == "Theirs" else None


def test_fit_is_refused_once_the_script_imports_the_package(package: str) -> None:
    finders = list(sys.meta_path)
    with other_keras_fit_refused(package, _why, RuntimeError):
        module = __import__(package)
        with pytest.raises(
            RuntimeError, match=r"model\.fit\(\) cannot train this model: it is theirs"
        ):
            module.Theirs().fit(1, epochs=2)
        assert module.Model().fit() == "trained"  # what `why` lets through trains
    assert module.Theirs().fit() == "trained"
    assert sys.meta_path == finders


def test_fit_is_refused_where_the_package_was_imported_before(package: str) -> None:
    module = __import__(package)
    with (
        other_keras_fit_refused(package, _why, ValueError),
        pytest.raises(ValueError, match="it is theirs"),
    ):
        module.Theirs().fit()
    assert module.Theirs().fit() == "trained"


def test_nothing_is_imported_for_it(package: str) -> None:
    with other_keras_fit_refused(package, _why, RuntimeError):
        assert package not in sys.modules
    assert package not in sys.modules
