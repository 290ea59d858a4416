"""``python -m pedl.exec.worker FD``: a warm worker of the master's resource manager, running
the trials it is handed over the control socket ``FD`` (see :func:`pedl.exec.run_worker`)."""

import sys

from pedl.exec import run_worker

if __name__ == "__main__":
    raise SystemExit(run_worker(int(sys.argv[1])))
