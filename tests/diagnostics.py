"""What a test that failed on time shows about its process, for a CI log."""

from __future__ import annotations

import sys
import threading
import traceback
from pathlib import Path


def thread_stacks() -> str:
    """Every Python thread of this process but the test's own (its traceback is above) and
    its innermost frames, one line each, so the section stays short in a CI log."""
    frames = sys._current_frames()
    parts = []
    for thread in threading.enumerate():
        if thread is threading.main_thread():
            continue
        frame = frames.get(thread.ident or -1)
        summary = traceback.extract_stack(frame, limit=8) if frame else []
        lines = [f"  {Path(f.filename).name}:{f.lineno} {f.name}: {f.line}" for f in summary]
        parts.append(f"--- {thread.name} (daemon={thread.daemon})\n" + "\n".join(lines))
    return f"{len(parts)} threads besides the test's\n" + "\n".join(parts)
