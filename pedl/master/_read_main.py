"""``python -m pedl.master._read_main SOCKET``: one read process of a master.

Started by :class:`pedl.master._reads.ReadProcesses`, which writes the master's settings as
one JSON line on its standard input and keeps that open until the process must stop.
"""

import sys

from pedl.master._serve import serve_reads
from pedl.master._settings import MasterSettings

serve_reads(MasterSettings.model_validate_json(sys.stdin.buffer.readline()), sys.argv[1])
