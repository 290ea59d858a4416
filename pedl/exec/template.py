"""``python -m pedl.exec.template FD``: a warm-worker template of the master's resource manager,
forking warm workers on request over the control socket ``FD`` (see
:func:`pedl.exec.run_template`)."""

import sys

from pedl.exec import run_template

if __name__ == "__main__":
    raise SystemExit(run_template(int(sys.argv[1])))
