"""``python -m pedl.tuner._describe REQUEST ANSWER``: read a KerasTuner script's search for
:func:`pedl.tuner._implied.implied_config`.

Run in the model definition's directory, it runs the entrypoint script (``REQUEST``'s
``entrypoint``, a JSON object) up to ``tuner.search`` and writes to the file ``ANSWER`` the
searcher fields the tuner implies: ``metric`` and ``smaller_is_better`` (its objective), and
for ``Hyperband`` ``max_length`` (``max_epochs`` epochs) and, where ``REQUEST`` has no
``records_per_epoch``, the examples of one epoch of the search's training data; or
``{"error": message}``, naming what to change.
"""

from __future__ import annotations

import json
import math
import sys
import traceback
from pathlib import Path
from typing import Any

from pedl.tuner._capture import SearchCall, TunerNotFoundError, capture_search
from pedl.tuner._implied import script_of
from pedl.tuner._searcher import TunerSetupError, kind_of, objective_of

_BEFORE = "before reaching tuner.search, where PEDL reads the tuner's objective"
_TRACE_TAIL = 3000


def describe(request: dict[str, Any], code_dir: Path) -> dict[str, Any]:
    """The searcher fields the script's tuner implies (see the module docstring)."""
    script = script_of(str(request.get("entrypoint") or ""))
    if script is None:
        raise TunerSetupError(f"the entrypoint {request.get('entrypoint')!r} names no script")
    call = capture_search(code_dir / script[0], script[1], code_dir)
    tuner = call.tuner
    objective = objective_of(tuner)
    executions = getattr(tuner, "executions_per_trial", 1)
    if executions != 1:
        raise TunerSetupError(
            f"the tuner's executions_per_trial is {executions}: a PEDL trial trains its model "
            "once; use executions_per_trial=1"
        )
    found: dict[str, Any] = {
        "metric": objective.metric,
        "smaller_is_better": objective.smaller_is_better,
    }
    if kind_of(tuner) == "adaptive_asha":
        found["max_length"] = {"epochs": int(tuner.oracle.max_epochs)}
        if not request.get("records_per_epoch"):
            records = training_records(call)
            if records is None:
                raise TunerSetupError(
                    "Hyperband trains trials in rungs of epochs, and the search's training "
                    "data has no length PEDL can read (a dataset or generator): set "
                    "records_per_epoch in the config (the training examples of one epoch)"
                )
            found["records_per_epoch"] = records
    return found


def training_records(call: SearchCall) -> int | None:
    """The examples one epoch of ``tuner.search(x, ...)`` trains on, where ``x`` is arrays
    (one, a list or a dict of them), less Keras's ``validation_split``; else ``None``."""
    x = call.args[0] if call.args else call.kwargs.get("x")
    if isinstance(x, dict):
        x = next(iter(x.values()), None)
    elif isinstance(x, list | tuple):
        x = x[0] if x else None
    shape = getattr(x, "shape", None)
    if not shape or not isinstance(shape[0], int):
        return None
    split = float(call.kwargs.get("validation_split") or 0.0)
    records = math.floor(shape[0] * (1.0 - split)) if split else int(shape[0])
    return records if records > 0 else None


def main(argv: list[str]) -> int:
    request, answer = json.loads(argv[0]), Path(argv[1])
    try:
        record = describe(request, Path.cwd())
    except (TunerSetupError, TunerNotFoundError) as e:
        record = {"error": str(e)}
    except SystemExit as e:  # the script exited before tuner.search
        record = {"error": f"the script exited with status {e.code} {_BEFORE}", "output": True}
    except BaseException as e:  # the script's own error
        trace = "".join(traceback.format_exception(e))[-_TRACE_TAIL:]
        record = {"error": f"the script raised {type(e).__name__}: {e} {_BEFORE}\n{trace}"}
    answer.write_text(json.dumps(record), encoding="utf-8")
    return 1 if "error" in record else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
