"""The compatibility tests import ``determined`` from this checkout's ``compat/determined``
(installed by ``pip install -e compat/determined``, or found here when it is not), in this
process and in the processes it starts (a master, its trial processes)."""

import os
import sys
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

_COMPAT = str(Path(__file__).parents[2] / "compat" / "determined")
if _COMPAT not in sys.path:
    sys.path.insert(0, _COMPAT)
_PATH = os.environ.get("PYTHONPATH", "")
if _COMPAT not in _PATH.split(os.pathsep):
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (_COMPAT, _PATH) if p)
