"""``python -m pedl.master``: run a master with settings from ``PEDL_*`` variables."""

import sys

from pedl.master import MasterSettings, serve
from pedl.master._private import ExposedFilesError

try:
    serve(MasterSettings())
except ExposedFilesError as err:  # one line, no traceback, as `pedl master` says it
    sys.exit(f"pedl master: {err}")
