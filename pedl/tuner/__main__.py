"""``python -m pedl.tuner EXPERIMENT_ID [SCRIPT [ARGS...]]``: run a KerasTuner script's code
after ``tuner.search`` on a PEDL experiment's results (see :mod:`pedl.tuner._results`).

Without SCRIPT, the experiment's own entrypoint (``python3 search.py --flags``) runs, from the
current directory. The master is ``PEDL_MASTER`` (or ``--master``); the SDK signs in as
``pedl user login`` left it, or from ``PEDL_USER``/``PEDL_PASSWORD``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m pedl.tuner",
        description="Run a KerasTuner script's code after tuner.search on a PEDL experiment.",
    )
    parser.add_argument("experiment_id", type=int)
    parser.add_argument("script", nargs="?", help="default: the experiment's entrypoint")
    parser.add_argument("args", nargs=argparse.REMAINDER)
    parser.add_argument("-m", "--master", help="the master's URL (default: $PEDL_MASTER)")
    options = parser.parse_args(argv)

    from pedl import client
    from pedl.tuner._results import run_with_results, script_of

    if options.master:
        client.set_master(options.master)
    experiment = client.get_experiment(options.experiment_id)
    if options.script is None:
        script, args = script_of(str(experiment.config.get("entrypoint") or ""))
    else:
        script, args = options.script, tuple(options.args)
    path = Path(script)
    if not path.is_file():
        print(f"error: {path} is not a file here ({Path.cwd()})", file=sys.stderr)
        return 2
    run_with_results(experiment, path, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
