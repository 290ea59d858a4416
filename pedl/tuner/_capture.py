"""Running a script up to its ``tuner.search(...)`` call, to read the tuner it built.

While :func:`capture_search` runs, ``keras_tuner``'s ``BaseTuner.search`` is replaced by a
function that records the tuner and the call's arguments and stops the script there (a
``BaseException``, so that the script's ``except Exception`` does not catch it). Nothing
after the call runs.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import runpy
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import keras_tuner


class TunerNotFoundError(RuntimeError):
    """The script ended without calling a KerasTuner tuner's ``search``."""


@dataclasses.dataclass(frozen=True)
class SearchCall:
    """A script's ``tuner.search(*args, **kwargs)`` call, with its tuner."""

    tuner: Any
    args: tuple[Any, ...]
    kwargs: dict[str, Any]


class _Captured(BaseException):
    def __init__(self, call: SearchCall) -> None:
        super().__init__("the script called tuner.search")
        self.call = call


@contextlib.contextmanager
def search_replaced(replacement: Any) -> Iterator[None]:
    """``BaseTuner.search`` (every tuner's) is ``replacement`` while the block runs."""
    base = keras_tuner.engine.base_tuner.BaseTuner
    original = base.search
    base.search = replacement
    try:
        yield
    finally:
        base.search = original


def capture_search(script: Path, args: tuple[str, ...], code_dir: Path) -> SearchCall:
    """Run ``script`` (as ``python3 script args`` in ``code_dir``) up to its first
    ``tuner.search`` call and return that call. Raises :class:`TunerNotFoundError` where the
    script ends without one; the script's own errors propagate."""

    def record(tuner: Any, *fit_args: Any, **fit_kwargs: Any) -> None:
        raise _Captured(SearchCall(tuner, fit_args, dict(fit_kwargs)))

    try:
        with search_replaced(record), as_main_script(script, args, code_dir):
            runpy.run_path(str(script), run_name="__main__")
    except _Captured as captured:
        return captured.call
    except SystemExit as e:
        if e.code not in (0, None):
            raise
    raise TunerNotFoundError(
        f"{script.name} ended without calling a KerasTuner tuner's search(): the searcher "
        "pedl.tuner:KerasTunerSearch reads its search space from that call"
    )


@contextlib.contextmanager
def as_main_script(path: Path, args: tuple[str, ...], code_dir: Path) -> Iterator[None]:
    """Run as ``python3 path args`` would: argv, the script's directory first on sys.path,
    ``code_dir`` as the working directory."""
    saved_argv, saved_cwd = sys.argv, os.getcwd()
    script_dir = str(path.parent)
    sys.argv = [str(path), *args]
    sys.path.insert(0, script_dir)
    os.chdir(code_dir)
    try:
        yield
    finally:
        os.chdir(saved_cwd)
        sys.argv = saved_argv
        with contextlib.suppress(ValueError):
            sys.path.remove(script_dir)
