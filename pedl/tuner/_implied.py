"""The searcher a KerasTuner script implies: a config that names none runs the script's search.

A config whose entrypoint is a script that imports ``keras_tuner`` and that names no
``searcher`` (``entrypoint: python3 search.py`` alone is a whole config) is a KerasTuner
search: the master (and local mode) fill in ``searcher: {name: custom, search_method:
pedl.tuner:KerasTunerSearch}`` with the tuner's objective as ``metric`` and
``smaller_is_better``, and, for ``Hyperband``, ``max_length: {epochs: max_epochs}`` (with
``records_per_epoch`` from the search's training data where the config gives none). A config
naming that searcher without a ``metric`` gets the tuner's objective the same way. Any other
config (a searcher named, a script without KerasTuner, a Trial class) is left as written, so a
script's ``searcher: single`` means what it always did.

The objective is known only by running the script up to ``tuner.search`` (it may depend on
the script's arguments): :func:`implied_config` runs ``python -m pedl.tuner._describe`` in a
process of its own, in the model definition's directory, with the environment it is given
(the master gives a trial's). Importing this module imports neither TensorFlow nor
KerasTuner.
"""

from __future__ import annotations

import ast
import json
import os
import shlex
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pedl.tuner._trial import SEARCH_METHOD

DESCRIBE_MODULE = "pedl.tuner._describe"
_ROOT = str(Path(__file__).resolve().parents[2])
_TUNER_MODULES = ("keras_tuner", "kerastuner")
_OUTPUT_TAIL = 4000

DESCRIBE_TIMEOUT = float(os.environ.get("PEDL_SEARCHER_START_TIMEOUT") or 120.0)
"""Seconds the script has to reach ``tuner.search``: those a searcher process has to start
(``PEDL_SEARCHER_START_TIMEOUT``, default 120)."""


class ImpliedSearchError(ValueError):
    """The script's KerasTuner search cannot be read: the message says why (the script's own
    error, a tuner PEDL cannot run, a setting missing from the config) and what to do."""


def script_of(entrypoint: str) -> tuple[str, tuple[str, ...]] | None:
    """The script and arguments of a script entrypoint (``python3 search.py --flags`` or
    ``search.py --flags``), or ``None`` for any other entrypoint."""
    try:
        tokens = shlex.split(entrypoint)
    except ValueError:
        return None
    if tokens and Path(tokens[0]).name.startswith("python"):
        tokens = tokens[1:]
    if not tokens or not tokens[0].endswith(".py"):
        return None
    return tokens[0], tuple(tokens[1:])


def imports_keras_tuner(source: str) -> bool:
    """Whether Python ``source`` imports ``keras_tuner`` (or its old name ``kerastuner``)
    anywhere, read without running it."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return False
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        else:
            continue
        if any(name.split(".")[0] in _TUNER_MODULES for name in names):
            return True
    return False


def wants_implied_searcher(document: Mapping[str, Any]) -> bool:
    """Whether the config (a mapping, as written) leaves its searcher to the script: it names
    no ``searcher``, or names ``pedl.tuner:KerasTunerSearch`` without a ``metric``."""
    searcher = document.get("searcher")
    if searcher is None:
        return True
    if not isinstance(searcher, Mapping):
        return False
    return (
        searcher.get("name") == "custom"
        and str(searcher.get("search_method") or "").strip() == SEARCH_METHOD
        and "metric" not in searcher
    )


def tuner_script(document: Mapping[str, Any], code_dir: Path) -> Path | None:
    """The entrypoint script in ``code_dir`` when it imports KerasTuner, else ``None``."""
    entrypoint = document.get("entrypoint")
    if not isinstance(entrypoint, str):
        return None
    script = script_of(entrypoint)
    if script is None:
        return None
    path = (code_dir / script[0]).resolve()
    if not path.is_relative_to(code_dir.resolve()) or not path.is_file():
        return None
    try:
        source = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    return path if imports_keras_tuner(source) else None


def implied_config(
    document: Mapping[str, Any],
    code_dir: Path,
    *,
    env: Mapping[str, str] | None = None,
    timeout: float = DESCRIBE_TIMEOUT,
) -> dict[str, Any] | None:
    """``document`` (a config mapping, as written) with the searcher its KerasTuner script
    implies filled in (see the module docstring), or ``None`` where it implies none.

    Runs the script up to ``tuner.search`` in a process of its own (``env``, default this
    process's, with ``code_dir`` as its working directory; ``timeout`` seconds at most).
    Raises :class:`ImpliedSearchError` naming the problem where the search cannot be read.
    """
    if not wants_implied_searcher(document) or tuner_script(document, code_dir) is None:
        return None
    given = document.get("searcher") or {}
    request = {
        "entrypoint": document["entrypoint"],
        "records_per_epoch": document.get("records_per_epoch") or 0,
        "max_length": given.get("max_length") if isinstance(given, Mapping) else None,
    }
    found = _describe(request, code_dir, env, timeout)
    filled = dict(document)
    searcher = dict(given) if isinstance(given, Mapping) else {}
    searcher.setdefault("name", "custom")
    searcher.setdefault("search_method", SEARCH_METHOD)
    searcher["metric"] = found["metric"]
    searcher.setdefault("smaller_is_better", found["smaller_is_better"])
    if found.get("max_length") is not None:
        searcher.setdefault("max_length", found["max_length"])
    filled["searcher"] = searcher
    if found.get("records_per_epoch") and not document.get("records_per_epoch"):
        filled["records_per_epoch"] = found["records_per_epoch"]
    return filled


def _describe(
    request: Mapping[str, Any],
    code_dir: Path,
    env: Mapping[str, str] | None,
    timeout: float,
) -> dict[str, Any]:
    base = dict(os.environ if env is None else env)
    path = os.pathsep.join(p for p in (_ROOT, base.get("PYTHONPATH")) if p)
    child_env = {**base, "CUDA_VISIBLE_DEVICES": "", "PYTHONPATH": path}
    child_env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    with tempfile.TemporaryDirectory(prefix="pedl-tuner-describe-") as workdir:
        answer = Path(workdir) / "answer.json"
        command = [sys.executable, "-m", DESCRIBE_MODULE, json.dumps(request), str(answer)]
        try:
            done = subprocess.run(
                command,
                cwd=code_dir,
                env=child_env,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                timeout=timeout,
            )
        except subprocess.TimeoutExpired as e:
            raise ImpliedSearchError(
                f"the script did not reach tuner.search within {timeout:g} seconds, where PEDL "
                "reads the tuner's objective; name the searcher in the config (searcher: "
                f"{{name: custom, search_method: {SEARCH_METHOD}, metric: ..., "
                "smaller_is_better: ...}) or make the script reach it sooner"
            ) from e
        try:
            record: dict[str, Any] = json.loads(answer.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            output = (done.stdout + done.stderr)[-_OUTPUT_TAIL:]
            raise ImpliedSearchError(
                f"reading the script's KerasTuner search failed (exit status "
                f"{done.returncode}):\n{output}"
            ) from None
    if "error" in record:
        message = str(record["error"])
        if record.get("output"):  # what the script printed says why it exited
            message += ":\n" + (done.stdout + done.stderr)[-_OUTPUT_TAIL:]
        raise ImpliedSearchError(message)
    return record
