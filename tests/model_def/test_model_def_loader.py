"""load(): every layout, broken definitions, and no leaking between successive loads."""

from __future__ import annotations

import importlib
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

import pedl
from pedl.model_def import PACKAGE_NAME, ModelDefError, load, unload
from pedl.script import ScriptTrial, trial_class_of

TRIAL_SRC = """
import pedl


class {name}(pedl.Trial):
    VALUE = {value!r}
"""


def write(root: Path, relpath: str, content: str) -> Path:
    path = root / relpath
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(content))
    return path


@pytest.fixture(autouse=True)
def _unload_after() -> Iterator[None]:
    yield
    unload()


def package_model(root: Path, value: str = "a") -> Path:
    write(root, "__init__.py", "from .model import MyTrial, make_data_loaders\n")
    write(
        root,
        "model.py",
        TRIAL_SRC.format(name="MyTrial", value=value)
        + "\nfrom .helpers import LOADERS\n\ndef make_data_loaders(config, hparams):\n"
        "    return LOADERS\n",
    )
    write(root, "helpers.py", f"LOADERS = ('train-{value}', 'val-{value}')\n")
    return root


def test_package_with_relative_imports(tmp_path: Path) -> None:
    model = package_model(tmp_path / "m")
    definition = load(model)
    assert definition.module is not None and definition.module.__name__ == PACKAGE_NAME
    assert definition.trial_class is not None
    assert definition.trial_class.__name__ == "MyTrial"
    assert issubclass(definition.trial_class, pedl.Trial)
    assert definition.trial_class.__module__ == f"{PACKAGE_NAME}.model"
    assert definition.make_data_loaders is not None
    assert definition.make_data_loaders({}, {}) == ("train-a", "val-a")
    assert definition.entrypoint_script is None
    assert str(model.resolve()) in sys.path


def test_abstract_and_framework_classes_are_not_candidates(tmp_path: Path) -> None:
    write(
        tmp_path,
        "__init__.py",
        """
        import abc
        import pedl
        from pedl import Trial


        class Base(pedl.Trial, abc.ABC):
            @abc.abstractmethod
            def build(self): ...


        class Concrete(Base):
            def build(self):
                return 1
        """,
    )
    definition = load(tmp_path)
    assert definition.trial_class is not None
    assert definition.trial_class.__name__ == "Concrete"
    assert definition.make_data_loaders is None


def test_entrypoint_module_class(tmp_path: Path) -> None:
    write(tmp_path, "pkg/__init__.py", "")
    write(tmp_path, "pkg/trials.py", TRIAL_SRC.format(name="First", value=1))
    write(tmp_path, "pkg/other.py", TRIAL_SRC.format(name="Second", value=2))
    definition = load(tmp_path, "pkg.trials:First")
    assert definition.trial_class is not None
    assert definition.trial_class.VALUE == 1  # type: ignore[attr-defined]
    assert definition.module is not None and definition.module.__name__ == "pkg.trials"
    assert definition.entrypoint_script is None


def test_entrypoint_errors(tmp_path: Path) -> None:
    write(tmp_path, "mod.py", TRIAL_SRC.format(name="T", value=1) + "\nNOT_A_CLASS = 3\n")
    with pytest.raises(ModelDefError, match="no attribute 'Missing'"):
        load(tmp_path, "mod:Missing")
    with pytest.raises(ModelDefError, match=r"neither a subclass of pedl\.Trial"):
        load(tmp_path, "mod:NOT_A_CLASS")
    with pytest.raises(ModelDefError, match="no such module"):
        load(tmp_path, "nomod:T")
    with pytest.raises(ModelDefError, match="module:TrialClass"):
        load(tmp_path, "mod.T")
    assert str(tmp_path.resolve()) not in sys.path  # failed loads clean up


def test_single_file(tmp_path: Path) -> None:
    path = write(tmp_path, "solo.py", TRIAL_SRC.format(name="Solo", value="s"))
    write(tmp_path, "unrelated.py", "raise RuntimeError('must not be imported')\n")
    definition = load(path)
    assert definition.trial_class is not None and definition.trial_class.__name__ == "Solo"
    assert definition.module is not None and definition.module.__name__ == PACKAGE_NAME


def test_directory_with_one_top_level_file(tmp_path: Path) -> None:
    write(tmp_path, "solo.py", TRIAL_SRC.format(name="Solo", value="s"))
    write(tmp_path, "sub/ignored.py", "raise RuntimeError('not top level')\n")
    definition = load(tmp_path)
    assert definition.trial_class is not None and definition.trial_class.__name__ == "Solo"


def test_directory_with_several_files_and_no_init(tmp_path: Path) -> None:
    write(tmp_path, "a.py", TRIAL_SRC.format(name="A", value=1))
    write(tmp_path, "b.py", TRIAL_SRC.format(name="B", value=2))
    with pytest.raises(ModelDefError, match=r"2 top-level \.py files \(a\.py, b\.py\).*entrypoint"):
        load(tmp_path)


@pytest.mark.parametrize(
    ("entrypoint", "script", "args"),
    [
        ("train.py", "train.py", ()),
        ("python3 train.py --epochs 3", "train.py", ("--epochs", "3")),
        ("python scripts/run.py", "scripts/run.py", ()),
        ("python3.11 -u ./scripts/run.py x", "scripts/run.py", ("x",)),
        (
            "python3 -m determined.launch.tensorflow -- python3 train.py --lr 0.1",
            "train.py",
            ("--lr", "0.1"),
        ),
    ],
)
def test_script_entrypoint(
    tmp_path: Path, entrypoint: str, script: str, args: tuple[str, ...]
) -> None:
    failing = "raise RuntimeError('a script must not be imported')\n"
    write(tmp_path, "train.py", failing)
    write(tmp_path, "scripts/run.py", failing)
    definition = load(tmp_path, entrypoint)
    assert definition.entrypoint_script == script
    assert definition.entrypoint_args == args
    assert definition.module is None and definition.simple
    assert trial_class_of(definition) is ScriptTrial
    assert str(tmp_path.resolve()) in sys.path  # the script runs with its directory importable
    unload()
    assert str(tmp_path.resolve()) not in sys.path


def test_a_launchers_trial_is_the_entrypoint(tmp_path: Path) -> None:
    write(tmp_path, "mod.py", TRIAL_SRC.format(name="T", value=1))
    definition = load(tmp_path, "python3 -m determined.launch.horovod --autohorovod --trial mod:T")
    assert definition.trial_class is not None and definition.trial_class.__name__ == "T"
    with pytest.raises(ModelDefError, match="without a command after"):
        load(tmp_path, "python3 -m determined.launch.tensorflow")


def test_function_entrypoint(tmp_path: Path) -> None:
    write(tmp_path, "train.py", "def main():\n    return 'trained'\n")
    definition = load(tmp_path, "train:main")
    assert definition.simple and trial_class_of(definition) is ScriptTrial
    assert definition.entrypoint_script is None
    assert definition.entrypoint_function is not None
    assert definition.entrypoint_function() == "trained"


def test_script_entrypoint_errors(tmp_path: Path) -> None:
    write(tmp_path, "train.py", "")
    with pytest.raises(ModelDefError, match=r"'missing\.py'"):
        load(tmp_path, "python3 missing.py")
    with pytest.raises(ModelDefError, match="inside the model definition"):
        load(tmp_path, "../train.py")
    with pytest.raises(ModelDefError, match="names no script"):
        load(tmp_path, "python3 -m train")


def test_syntax_error_names_file_and_line(tmp_path: Path) -> None:
    write(tmp_path, "__init__.py", "from .model import T\n")
    bad = write(tmp_path, "model.py", "import pedl\n\ndef broken(:\n    pass\n")
    with pytest.raises(ModelDefError) as info:
        load(tmp_path)
    message = str(info.value)
    assert f"{bad.resolve()}, line 3" in message
    assert "SyntaxError" in message and "Traceback" in message
    assert isinstance(info.value.__cause__, SyntaxError)
    assert PACKAGE_NAME not in sys.modules


def test_missing_import_names_file_and_line(tmp_path: Path) -> None:
    init = write(tmp_path, "__init__.py", "import os\nimport surely_not_installed_pkg\n")
    with pytest.raises(ModelDefError) as info:
        load(tmp_path)
    message = str(info.value)
    assert f"{init.resolve()}, line 2" in message
    assert "surely_not_installed_pkg" in message
    assert isinstance(info.value.__cause__, ModuleNotFoundError)


def test_exception_at_import_names_file_and_line_and_traceback(tmp_path: Path) -> None:
    write(tmp_path, "__init__.py", "from .model import *\n")
    model = write(
        tmp_path,
        "model.py",
        "def helper():\n    return 1 / 0\n\nVALUE = helper()\n",
    )
    with pytest.raises(ModelDefError) as info:
        load(tmp_path)
    message = str(info.value)
    # The innermost user frame: the division in helper(), line 2.
    assert f"{model.resolve()}, line 2" in message
    assert "ZeroDivisionError" in message
    assert "VALUE = helper()" in message  # the original traceback text
    assert isinstance(info.value.__cause__, ZeroDivisionError)


def test_no_trial_class(tmp_path: Path) -> None:
    write(tmp_path, "__init__.py", "def make_data_loaders(config, hparams):\n    return 1\n")
    with pytest.raises(ModelDefError, match=r"no concrete pedl\.Trial.*Found: none.*entrypoint"):
        load(tmp_path)


def test_two_trial_classes(tmp_path: Path) -> None:
    write(
        tmp_path,
        "__init__.py",
        TRIAL_SRC.format(name="One", value=1) + TRIAL_SRC.format(name="Two", value=2),
    )
    with pytest.raises(
        ModelDefError, match=r"2 concrete.*model_def\.One, model_def\.Two.*entrypoint"
    ):
        load(tmp_path)


def test_successive_loads_do_not_leak(tmp_path: Path) -> None:
    first = package_model(tmp_path / "first", value="first")
    second = package_model(tmp_path / "second", value="second")
    write(second, "extra.py", "X = 1\n")
    one = load(first)
    assert one.make_data_loaders is not None
    assert one.make_data_loaders({}, {}) == ("train-first", "val-first")
    assert "model_def.helpers" in sys.modules
    two = load(second)
    assert two.make_data_loaders is not None
    assert two.make_data_loaders({}, {}) == ("train-second", "val-second")
    assert two.trial_class is not None and two.trial_class.VALUE == "second"  # type: ignore[attr-defined]
    assert str(first.resolve()) not in sys.path
    assert str(second.resolve()) in sys.path
    loaded_files = [getattr(m, "__file__", None) or "" for m in list(sys.modules.values())]
    assert not any(f.startswith(str(first.resolve())) for f in loaded_files)


def test_entrypoint_modules_do_not_leak_between_loads(tmp_path: Path) -> None:
    for name, value in [("a", 1), ("b", 2)]:
        write(tmp_path / name, "trials.py", TRIAL_SRC.format(name="T", value=value))
    first = load(tmp_path / "a", "trials:T")
    assert first.trial_class is not None and first.trial_class.VALUE == 1  # type: ignore[attr-defined]
    second = load(tmp_path / "b", "trials:T")
    assert second.trial_class is not None and second.trial_class.VALUE == 2  # type: ignore[attr-defined]
    unload()
    assert "trials" not in sys.modules
    assert str((tmp_path / "b").resolve()) not in sys.path


def test_unload_keeps_modules_imported_before_the_load(tmp_path: Path) -> None:
    write(tmp_path, "already_here.py", "X = 1\n")
    write(tmp_path, "solo.py", TRIAL_SRC.format(name="Solo", value=1) + "import already_here\n")
    sys.path.insert(0, str(tmp_path))
    try:
        importlib.import_module("already_here")
        load(tmp_path / "solo.py")
        unload()
        assert "already_here" in sys.modules  # was imported before load(): left alone
        assert PACKAGE_NAME not in sys.modules
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("already_here", None)
