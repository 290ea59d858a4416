"""Loading a model definition: importing the user's code and finding its Trial class."""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import re
import shlex
import sys
import threading
import traceback
import types
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from pedl import Trial
from pedl.model_def._errors import ModelDefError

PACKAGE_NAME = "model_def"
"""The name a model definition package (or single file) is imported under."""

_PYTHON_RE = re.compile(r"^python(\d+(\.\d+)?)?$")
_LAUNCHERS = ("determined.launch.", "pedl.launch.")
"""Modules of Determined's launchers (``python3 -m determined.launch.tensorflow -- python3
train.py``, ``... determined.launch.horovod --trial model_def:Trial``): PEDL starts the
trial's processes itself, so the command they launch is the entrypoint."""


@dataclass(frozen=True)
class ModelDefinition:
    """A loaded model definition.

    ``module`` is the imported user module (None for a script entrypoint, which is not
    imported); ``trial_class`` the user's concrete :class:`pedl.Trial` subclass, or None for a
    simple model definition (a script or a ``module:function`` entrypoint: :attr:`simple`,
    which :func:`pedl.script.trial_class_of` runs); ``make_data_loaders`` the module's function
    of that name (the old PEDL form) or None; ``entrypoint_script`` the script of a simple model
    definition, as a POSIX path relative to the code directory, or None; ``entrypoint_args``
    the command-line arguments given after the script; ``entrypoint_function`` the function of
    a ``module:function`` entrypoint, or None.
    """

    module: types.ModuleType | None
    trial_class: type[Trial] | None
    make_data_loaders: Callable[..., Any] | None
    entrypoint_script: str | None
    entrypoint_args: tuple[str, ...] = ()
    entrypoint_function: Callable[[], Any] | None = None

    @property
    def simple(self) -> bool:
        """A simple model definition: the user's training code decides, no Trial class."""
        return self.entrypoint_script is not None or self.entrypoint_function is not None


@dataclass
class _Loaded:
    root: Path
    path_entry: str
    preexisting: frozenset[str]


_lock = threading.Lock()
_current: _Loaded | None = None


def load(code_dir: str | Path, entrypoint: str | None = None) -> ModelDefinition:
    """Import the model definition in ``code_dir`` and return what it defines.

    - ``entrypoint="pkg.module:ClassName"``: ``code_dir`` goes first on ``sys.path``, the module
      is imported by name and the class taken from it (it must be a concrete Trial subclass).
    - ``entrypoint="pkg.module:function"``: as above, but the attribute is a function (a simple
      model definition that calls ``model.fit``); :attr:`ModelDefinition.simple`.
    - an entrypoint naming a script (``"train.py"``, ``"python3 train.py --epochs 3"``): nothing
      is imported; ``entrypoint_script`` is the script's path (it must exist in ``code_dir``),
      ``entrypoint_args`` the arguments after it (:attr:`ModelDefinition.simple`); the
      script runs with ``code_dir`` first on ``sys.path`` and its imports are unloaded by the
      next :func:`load` or :func:`unload`, as an imported model definition's are.
    - a Determined launcher (``python3 -m determined.launch.tensorflow -- python3 train.py``,
      ``python3 -m determined.launch.horovod --trial model_def:MyTrial``): the command or
      Trial class it launches, as above.
    - no entrypoint, ``code_dir/__init__.py`` exists: the directory is imported as the package
      ``model_def`` (relative imports work; ``code_dir`` is also on ``sys.path``) and the Trial
      class is the one concrete subclass of :class:`pedl.Trial` in its namespace.
    - no entrypoint, a single ``.py`` file, or a directory holding exactly one top-level ``.py``
      file and no ``__init__.py``: that file is imported as the module ``model_def``.

    Raises :class:`ModelDefError` when the code cannot be imported (the message names the file
    and line and holds the original traceback; the exception is chained), or when no unique
    Trial class is found. Each call first unloads the previously loaded model definition (its
    modules leave ``sys.modules``, its directory leaves ``sys.path``), so successive loads in
    one process do not see each other's code. Calls are serialised by a lock.
    """
    global _current
    with _lock:
        _unload_current()
        given = Path(code_dir)
        if not given.exists():
            raise ModelDefError(f"Model definition {str(given)!r} does not exist.")
        root = given.resolve()
        if entrypoint is not None and entrypoint.strip() == "":
            entrypoint = None
        if entrypoint is not None:
            entrypoint = _without_launcher(entrypoint)
        script = _script_of(entrypoint) if entrypoint is not None else None
        if script is not None:
            assert entrypoint is not None
            definition = _script_definition(root, entrypoint, script)

        directory = root if root.is_dir() else root.parent
        path_entry = str(directory)
        sys.path.insert(0, path_entry)
        _current = _Loaded(
            root=directory, path_entry=path_entry, preexisting=frozenset(sys.modules)
        )
        importlib.invalidate_caches()
        if script is not None:
            return definition
        try:
            if entrypoint is not None:
                return _load_entrypoint(directory, entrypoint)
            if root.is_dir() and (root / "__init__.py").is_file():
                module = _import_from_file(root / "__init__.py", directory, package=True)
            else:
                module = _import_from_file(_single_file(root), directory, package=False)
            return ModelDefinition(
                module=module,
                trial_class=_find_trial_class(module),
                make_data_loaders=_make_data_loaders(module),
                entrypoint_script=None,
            )
        except BaseException:
            _unload_current()
            raise


def unload() -> None:
    """Unload the model definition loaded last, if any (as the next :func:`load` would)."""
    with _lock:
        _unload_current()


def _unload_current() -> None:
    """Forget the previously loaded model definition's modules and ``sys.path`` entry."""
    global _current
    loaded, _current = _current, None
    if loaded is None:
        return
    for name, module in list(sys.modules.items()):
        if name == PACKAGE_NAME or name.startswith(PACKAGE_NAME + "."):
            del sys.modules[name]
            continue
        if name in loaded.preexisting:
            continue  # never unload what was there before (pedl itself, the stdlib, ...)
        file = getattr(module, "__file__", None)
        if file and Path(file).resolve().is_relative_to(loaded.root):
            del sys.modules[name]
    if loaded.path_entry in sys.path:
        sys.path.remove(loaded.path_entry)
    importlib.invalidate_caches()


def _without_launcher(entrypoint: str) -> str:
    """The entrypoint a Determined launcher command launches (the entrypoint itself if it
    names no launcher)."""
    try:
        tokens = shlex.split(entrypoint)
    except ValueError as e:
        raise ModelDefError(f"Cannot parse entrypoint {entrypoint!r}: {e}") from e
    if not (
        len(tokens) >= 3
        and _PYTHON_RE.match(tokens[0])
        and tokens[1] == "-m"
        and tokens[2].startswith(_LAUNCHERS)
    ):
        return entrypoint
    rest = tokens[3:]
    if "--trial" in rest and rest.index("--trial") + 1 < len(rest):
        return rest[rest.index("--trial") + 1]
    if "--" in rest and rest.index("--") + 1 < len(rest):
        return shlex.join(rest[rest.index("--") + 1 :])
    raise ModelDefError(
        f"Entrypoint {entrypoint!r} runs the launcher {tokens[2]} without a command after "
        '"--" or a "--trial module:TrialClass"; PEDL starts the processes itself, so give the '
        'command (e.g. "python3 train.py") or the Trial class.'
    )


def _script_of(entrypoint: str) -> tuple[str, tuple[str, ...]] | None:
    """Return the script an entrypoint runs and its arguments, or None if it is a
    ``module:Class`` / ``module:function`` entrypoint."""
    try:
        tokens = shlex.split(entrypoint)
    except ValueError as e:
        raise ModelDefError(f"Cannot parse entrypoint {entrypoint!r}: {e}") from e
    if not tokens:
        return None
    if tokens[0].endswith(".py"):
        return tokens[0], tuple(tokens[1:])
    if _PYTHON_RE.match(tokens[0]):
        for i, token in enumerate(tokens[1:], start=1):
            if token.endswith(".py") and not token.startswith("-"):
                return token, tuple(tokens[i + 1 :])
        raise ModelDefError(
            f"Entrypoint {entrypoint!r} runs Python but names no script (.py file); "
            'give e.g. "python3 train.py" or a "module:TrialClass" entrypoint.'
        )
    return None


def _script_definition(
    root: Path, entrypoint: str, script_and_args: tuple[str, tuple[str, ...]]
) -> ModelDefinition:
    script, args = script_and_args
    directory = root if root.is_dir() else root.parent
    path = PurePosixPath(script.replace("\\", "/"))
    resolved = (directory / path).resolve()
    if path.is_absolute() or not resolved.is_relative_to(directory):
        raise ModelDefError(
            f"The script {script!r} of entrypoint {entrypoint!r} must be a path inside the "
            "model definition."
        )
    if not resolved.is_file():
        raise ModelDefError(
            f"The script {script!r} of entrypoint {entrypoint!r} is not in the model "
            f"definition {str(directory)!r}."
        )
    return ModelDefinition(
        module=None,
        trial_class=None,
        make_data_loaders=None,
        entrypoint_script=resolved.relative_to(directory).as_posix(),
        entrypoint_args=args,
    )


def _load_entrypoint(directory: Path, entrypoint: str) -> ModelDefinition:
    module_name, sep, attr = entrypoint.strip().partition(":")
    if not sep or not module_name or not attr:
        raise ModelDefError(
            f'Entrypoint {entrypoint!r} is not of the form "module:TrialClass" or '
            '"module:function" (e.g. "model_def:MyTrial") and names no .py script.'
        )
    module = _import_module(module_name, directory)
    obj: Any = module
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise ModelDefError(
                f"Entrypoint {entrypoint!r}: module {module_name!r} ({_where(module)}) has no "
                f"attribute {attr!r}."
            )
        obj = getattr(obj, part)
    if inspect.isfunction(obj):
        return ModelDefinition(
            module=module,
            trial_class=None,
            make_data_loaders=None,
            entrypoint_script=None,
            entrypoint_function=obj,
        )
    if not (isinstance(obj, type) and issubclass(obj, Trial)):
        raise ModelDefError(
            f"Entrypoint {entrypoint!r} names {obj!r}, which is neither a subclass of "
            "pedl.Trial (e.g. pedl.keras.TFKerasTrial) nor a function that trains with "
            "model.fit()."
        )
    if inspect.isabstract(obj):
        missing = ", ".join(sorted(getattr(obj, "__abstractmethods__", ())))
        raise ModelDefError(
            f"Entrypoint {entrypoint!r} names the abstract class {obj.__qualname__}; "
            f"implement its abstract methods: {missing}."
        )
    return ModelDefinition(
        module=module,
        trial_class=obj,
        make_data_loaders=_make_data_loaders(module),
        entrypoint_script=None,
    )


def _import_module(module_name: str, directory: Path) -> types.ModuleType:
    try:
        return importlib.import_module(module_name)
    except Exception as e:
        if isinstance(e, ModuleNotFoundError) and e.name is not None:
            top = module_name.split(".")[0]
            if e.name == module_name or e.name == top:
                raise ModelDefError(
                    f"Cannot import entrypoint module {module_name!r}: there is no such module "
                    f"in the model definition {str(directory)!r}."
                ) from e
        raise _import_failure(e, directory, f"module {module_name!r}") from e


def _import_from_file(path: Path, directory: Path, *, package: bool) -> types.ModuleType:
    spec = importlib.util.spec_from_file_location(
        PACKAGE_NAME,
        path,
        submodule_search_locations=[str(directory)] if package else None,
    )
    if spec is None or spec.loader is None:
        raise ModelDefError(f"Cannot import {str(path)!r} as a Python module.")
    module = importlib.util.module_from_spec(spec)
    sys.modules[PACKAGE_NAME] = module
    try:
        spec.loader.exec_module(module)
    except Exception as e:
        raise _import_failure(e, directory, repr(str(path))) from e
    return module


def _single_file(root: Path) -> Path:
    if root.is_file():
        if root.suffix != ".py":
            raise ModelDefError(f"Model definition {str(root)!r} is not a Python (.py) file.")
        return root
    candidates = sorted(p for p in root.glob("*.py") if p.is_file())
    if len(candidates) == 1:
        return candidates[0]
    found = ", ".join(p.name for p in candidates) or "none"
    raise ModelDefError(
        f"Cannot tell which file of the model definition {str(root)!r} to load: it has no "
        f"__init__.py and {len(candidates)} top-level .py files ({found}). Add an __init__.py "
        'that exposes the Trial class, or set `entrypoint: "module:TrialClass"` in the '
        "experiment config."
    )


def _find_trial_class(module: types.ModuleType) -> type[Trial]:
    concrete: dict[int, type[Trial]] = {}
    abstract: list[str] = []
    for value in vars(module).values():
        if not (isinstance(value, type) and issubclass(value, Trial)) or value is Trial:
            continue
        if value.__module__ == "pedl" or value.__module__.startswith("pedl."):
            continue  # a framework base class, imported by the user to subclass it
        if inspect.isabstract(value):
            abstract.append(value.__qualname__)
        else:
            concrete[id(value)] = value
    if len(concrete) == 1:
        return next(iter(concrete.values()))
    names = sorted(f"{c.__module__}.{c.__qualname__}" for c in concrete.values())
    found = ", ".join(names) if names else "none"
    skipped = f" (abstract, skipped: {', '.join(sorted(abstract))})" if abstract else ""
    problem = "no" if not names else f"{len(names)}"
    raise ModelDefError(
        f"The model definition {_where(module)} exposes {problem} concrete pedl.Trial "
        f"subclasses; expected exactly one. Found: {found}{skipped}. Set "
        '`entrypoint: "module:TrialClass"` in the experiment config to choose the Trial class.'
    )


def _make_data_loaders(module: types.ModuleType) -> Callable[..., Any] | None:
    value = getattr(module, "make_data_loaders", None)
    return value if callable(value) else None


def _where(module: types.ModuleType) -> str:
    file = getattr(module, "__file__", None)
    return repr(file) if file else repr(module.__name__)


def _import_failure(error: BaseException, directory: Path, what: str) -> ModelDefError:
    """Describe an exception raised while importing user code: file, line, full traceback."""
    file: str | None = None
    line: int | None = None
    if isinstance(error, SyntaxError) and error.filename:
        file, line = error.filename, error.lineno
    else:
        frames = traceback.extract_tb(error.__traceback__)
        inside = [f for f in frames if _is_inside(f.filename, directory)]
        chosen = inside[-1] if inside else (frames[-1] if frames else None)
        if chosen is not None:
            file, line = chosen.filename, chosen.lineno
    location = f"{file}, line {line}" if file is not None else "an unknown location"
    details = "".join(traceback.format_exception(error)).rstrip()
    return ModelDefError(
        f"Failed to import the model definition {what}: {type(error).__name__}: {error}\n"
        f"  at {location}\n\nOriginal traceback:\n{details}"
    )


def _is_inside(filename: str, directory: Path) -> bool:
    try:
        return Path(filename).resolve().is_relative_to(directory)
    except (OSError, ValueError):
        return False
