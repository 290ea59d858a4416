"""Finding and constructing the custom search method a model definition holds.

Runs in the searcher process (:mod:`pedl.searcher._host`), never in the master: it imports
user code. Not imported by :mod:`pedl.searcher` (the model-definition loader imports
:mod:`pedl`, which imports this package).
"""

from __future__ import annotations

import importlib
import inspect
import sys
import types
from pathlib import Path
from typing import Any

from pedl import model_def
from pedl.config import CustomSearcherConfig, ExperimentConfig
from pedl.searcher._errors import SearcherError
from pedl.searcher._search_method import SearchMethod


def load_search_method(code_dir: Path, config: ExperimentConfig) -> SearchMethod:
    """Import the class ``config.searcher.search_method`` names in the model definition at
    ``code_dir`` and construct it.

    ``"module:Class"``: ``module`` is imported with ``code_dir`` first on ``sys.path`` (the
    entrypoint is not imported unless it is that module). ``"Class"``: in the entrypoint's
    module (the one :func:`pedl.model_def.load` imports). Nothing: the one concrete
    :class:`SearchMethod` subclass in the entrypoint's module's namespace (one defined in the
    module wins over imported ones). The class is called with no arguments when its
    constructor needs none, else with the experiment ``config``.

    Raises :class:`SearcherError` when the class cannot be found or is not a concrete
    ``SearchMethod``; errors of the user's code (import, constructor) propagate as raised.
    """
    searcher = config.searcher
    if not isinstance(searcher, CustomSearcherConfig):
        raise SearcherError(f"searcher.name is {searcher.name!r}, not 'custom'")
    spec = (searcher.search_method or "").strip()
    module_name, sep, class_name = spec.rpartition(":")
    if not sep:
        module_name, class_name = "", spec
    if module_name and not _in_model_def_package(module_name):
        sys.path.insert(0, str(code_dir))
        importlib.invalidate_caches()
        module = importlib.import_module(module_name)
    else:
        definition = model_def.load(code_dir, config.entrypoint)
        if definition.module is None:
            raise SearcherError(
                f"the entrypoint {config.entrypoint!r} runs a script, so it has no module to "
                'find the search method in; set searcher.search_method: "module:Class"'
            )
        module = importlib.import_module(module_name) if module_name else definition.module
    cls = _named_class(module, class_name, spec) if class_name else _the_class(module)
    return _construct(cls, config)


def _in_model_def_package(module_name: str) -> bool:
    """Whether the module lies in the package the loader imports a model definition as."""
    name = model_def.PACKAGE_NAME
    return module_name == name or module_name.startswith(name + ".")


def _named_class(module: types.ModuleType, class_name: str, spec: str) -> type[SearchMethod]:
    obj: Any = module
    for part in class_name.split("."):
        if not hasattr(obj, part):
            raise SearcherError(
                f"searcher.search_method {spec!r}: the module {module.__name__!r} "
                f"({_where(module)}) has no attribute {class_name!r}"
            )
        obj = getattr(obj, part)
    if not (isinstance(obj, type) and issubclass(obj, SearchMethod)):
        raise SearcherError(
            f"searcher.search_method {spec!r} names {obj!r}, which is not a subclass of "
            "pedl.searcher.SearchMethod"
        )
    if inspect.isabstract(obj):
        missing = ", ".join(sorted(getattr(obj, "__abstractmethods__", ())))
        raise SearcherError(
            f"searcher.search_method {spec!r} names the abstract class {obj.__qualname__}; "
            f"implement its abstract methods: {missing}"
        )
    return obj


def _the_class(module: types.ModuleType) -> type[SearchMethod]:
    found: dict[int, type[SearchMethod]] = {}
    for value in vars(module).values():
        if (
            isinstance(value, type)
            and issubclass(value, SearchMethod)
            and not _is_pedls(value)
            and not inspect.isabstract(value)
        ):
            found[id(value)] = value
    classes = list(found.values())
    if len(classes) > 1:
        own = [c for c in classes if c.__module__ == module.__name__]
        classes = own if len(own) == 1 else classes
    if len(classes) == 1:
        return classes[0]
    names = ", ".join(sorted(f"{c.__module__}.{c.__qualname__}" for c in classes)) or "none"
    raise SearcherError(
        f"the entrypoint's module {module.__name__!r} ({_where(module)}) has "
        f"{len(classes) or 'no'} concrete pedl.searcher.SearchMethod subclasses ({names}); "
        'name one with searcher.search_method: "module:Class"'
    )


def _is_pedls(cls: type) -> bool:
    return cls.__module__ == "pedl" or cls.__module__.startswith("pedl.")


def _construct(cls: type[SearchMethod], config: ExperimentConfig) -> SearchMethod:
    try:
        signature = inspect.signature(cls)
    except (TypeError, ValueError):
        return cls()
    for args in ((), (config,)):
        try:
            signature.bind(*args)
        except TypeError:
            continue
        return cls(*args)
    raise SearcherError(
        f"{cls.__qualname__}{signature} cannot be constructed: a custom search method's "
        "constructor takes no arguments, or one (the experiment config)"
    )


def _where(module: types.ModuleType) -> str:
    file = getattr(module, "__file__", None)
    return repr(file) if file else repr(module.__name__)
