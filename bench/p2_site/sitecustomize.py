"""P2 probe, loaded at interpreter start through ``PYTHONPATH`` (trial processes of P2 only).

Records ``time.time()`` when the interpreter is ready (this module runs) and, for a few
top-level imports, when their module body starts and ends executing (that span contains every
import their body triggers): ``TIMES["python_ready"]``, ``TIMES["<module>:start"]`` and
``TIMES["<module>:end"]``. The model definition's callback writes ``TIMES`` out. Inert unless
``PEDL_P2_OUT`` is set. The finder answers ``None`` at once for every other module.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import os
import sys
import time
from collections.abc import Sequence
from types import ModuleType
from typing import Any

TIMES: dict[str, float] = {"python_ready": time.time()}
WATCHED = frozenset({"pedl", "pedl.exec", "pedl.keras", "keras", "tensorflow"})


class _TimedLoader(importlib.abc.Loader):
    def __init__(self, name: str, inner: Any) -> None:
        self._name = name
        self._inner = inner

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        module: ModuleType | None = self._inner.create_module(spec)
        return module

    def exec_module(self, module: ModuleType) -> None:
        TIMES[f"{self._name}:start"] = time.time()
        try:
            self._inner.exec_module(module)
        finally:
            TIMES[f"{self._name}:end"] = time.time()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class _TimingFinder(importlib.abc.MetaPathFinder):
    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname not in WATCHED or f"{fullname}:start" in TIMES:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path, target)
        if spec is not None and spec.loader is not None:
            spec.loader = _TimedLoader(fullname, spec.loader)
        return spec


if os.environ.get("PEDL_P2_OUT"):
    sys.meta_path.insert(0, _TimingFinder())
