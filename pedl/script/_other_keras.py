"""A script's ``fit`` on the other Keras: refused at the call, with the reason.

PEDL intercepts ``fit`` of the Keras that ``tf.keras`` is (:mod:`pedl.keras._keras`): Keras 3,
or Keras 2 (``tf_keras``) with ``TF_USE_LEGACY_KERAS=1``. A script that builds its model with
the other package (``import keras`` in Keras 2 mode, ``import tf_keras`` on Keras 3) would
otherwise train it unseen, with no metrics, checkpoints or searcher, and end as if it had not
trained. While a script runs, the other package's ``Model.fit`` raises instead, with what to
change. That package is patched when the script imports it (a finder on ``sys.meta_path``),
never imported for it: importing Keras 3 beside TensorFlow takes seconds.
"""

from __future__ import annotations

import contextlib
import importlib.abc
import importlib.machinery
import sys
from collections.abc import Callable, Iterator, Sequence
from types import ModuleType
from typing import Any


class _PatchOnImport(importlib.abc.MetaPathFinder):
    """Calls ``patch`` on the module ``name`` as soon as it is imported (once executed)."""

    def __init__(self, name: str, patch: Callable[[ModuleType], None]) -> None:
        self.name = name
        self.patch = patch

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname != self.name:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None and spec.loader is not None:
                spec.loader = _Patching(spec.loader, self.patch)
                return spec
        return None


class _Patching(importlib.abc.Loader):
    def __init__(self, loader: importlib.abc.Loader, patch: Callable[[ModuleType], None]):
        self.loader = loader
        self.patch = patch

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return self.loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        self.loader.exec_module(module)
        self.patch(module)


@contextlib.contextmanager
def other_keras_fit_refused(
    package: str, why: Callable[[Any], str | None], error: Callable[[str], Exception]
) -> Iterator[None]:
    """While inside: ``package.Model.fit`` (the other Keras) raises ``error`` of ``why`` the
    model cannot train, whether the package is imported already or later."""
    patched: list[tuple[Any, Any]] = []

    def patch(module: ModuleType) -> None:
        model_class = getattr(module, "Model", None)
        if model_class is None:
            return
        original = model_class.fit

        def fit(model: Any, *args: Any, **kwargs: Any) -> Any:
            reason = why(model)
            if reason is None:  # (not the other Keras after all)
                return original(model, *args, **kwargs)
            raise error(f"model.fit() cannot train this model: {reason}")

        model_class.fit = fit
        patched.append((model_class, original))

    finder = _PatchOnImport(package, patch)
    if package in sys.modules:
        patch(sys.modules[package])
    else:
        sys.meta_path.insert(0, finder)
    try:
        yield
    finally:
        with contextlib.suppress(ValueError):
            sys.meta_path.remove(finder)
        for model_class, original in patched:
            model_class.fit = original
