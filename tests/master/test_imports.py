"""The master must run without TensorFlow: importing it and building the app loads neither
TensorFlow nor Keras."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.waits import scaled

CHECK = """
import sys
from pathlib import Path
from pedl.master import MasterSettings, create_app
create_app(MasterSettings(home=sys.argv[1], db_url="sqlite:///" + sys.argv[1] + "/x.db"))
heavy = sorted(m for m in sys.modules if m.split(".")[0] in {"tensorflow", "keras"})
print(",".join(heavy))
"""


def test_master_does_not_import_tensorflow(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-c", CHECK, str(tmp_path)],
        capture_output=True,
        text=True,
        check=True,
        timeout=scaled(60),
    )
    assert result.stdout.strip() == ""
