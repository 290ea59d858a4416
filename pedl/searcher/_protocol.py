"""The protocol between :class:`~pedl.searcher.RemoteSearchMethod` (in the master's, or local
mode's, process) and the searcher process that runs a custom search method.

JSON lines (UTF-8, one object per line) over the child's stdin and stdout:

1. The parent sends a *hello*: ``{"protocol": 1, "config": <ExperimentConfig.as_dict()>,
   "code_dir": <path>, "archive": <path or null>, "workdir": <path>}``. With ``archive`` (a
   model-definition archive on disk) the child unpacks it into ``code_dir`` first; it
   removes ``workdir`` (the parent's files for it) when it exits because the parent closed
   the pipe or died.
2. The child answers ``{"ready": {"class": "module.Class", "pid": <pid>}}`` once the user's
   class is imported and constructed, or ``{"error": <error>}`` and exits.
3. Then, one request at a time: ``{"id": n, "call": <name>, "state": <SearcherState.to_dict()>,
   "args": {...}}``, answered by ``{"id": n, "result": ...}`` or ``{"id": n, "error": <error>}``.
   ``call`` is a :class:`~pedl.searcher.SearchMethod` method; request ids are strings
   (``str(uuid)``); an event's result is a list of :func:`operation_to_dict` records,
   ``progress``'s a number, ``load``'s a searcher state dict, the others' ``null``.
4. The parent closing the child's stdin asks it to exit.

An ``<error>`` is :meth:`RemoteError.to_dict`: the exception's type, message, and the file
and line (relative to the model definition where it lies inside it) where it was raised.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from pedl.searcher._errors import SearcherError

PROTOCOL_VERSION = 1

MAX_MESSAGE_BYTES = 16 * 1024 * 1024
"""The longest line either side accepts."""

MAX_OPERATIONS = 10_000
"""The most operations one event handler may return."""

EVENT_CALLS = (
    "initial_operations",
    "on_trial_created",
    "on_validation_completed",
    "on_trial_closed",
    "on_trial_exited_early",
)
"""The calls whose result is a list of operations."""

STATE_CALLS = ("progress", "save", "load", "save_method_state", "load_method_state")
"""The other calls."""


class ProtocolError(SearcherError):
    """A line that is not a message of this protocol."""


def encode(message: dict[str, Any]) -> bytes:
    """One message as a JSON line."""
    return json.dumps(message, separators=(",", ":")).encode() + b"\n"


def decode(line: bytes) -> dict[str, Any]:
    """Parse one JSON line into a message (a JSON object); raise :class:`ProtocolError`."""
    try:
        message = json.loads(line)
    except (UnicodeDecodeError, ValueError) as e:
        raise ProtocolError(f"not JSON ({e}): {_excerpt(line)}") from e
    if not isinstance(message, dict):
        raise ProtocolError(f"not a JSON object: {_excerpt(line)}")
    return message


def _excerpt(line: bytes, limit: int = 200) -> str:
    text = repr(line[:limit])
    return text + ("..." if len(line) > limit else "")


@dataclass(frozen=True)
class RemoteError:
    """An exception raised in the searcher process, as the parent learns of it."""

    type: str
    message: str
    file: str | None = None
    line: int | None = None
    function: str | None = None
    traceback: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "type": self.type,
            "message": self.message,
            "file": self.file,
            "line": self.line,
            "function": self.function,
            "traceback": self.traceback,
        }

    @classmethod
    def from_dict(cls, record: Any) -> RemoteError:
        """Read :meth:`to_dict`'s record; raise :class:`ProtocolError` if it is not one."""
        if not isinstance(record, dict) or not isinstance(record.get("type"), str):
            raise ProtocolError(f"not an error record: {record!r:.200}")
        line = record.get("line")
        return cls(
            type=record["type"],
            message=str(record.get("message", "")),
            file=str(record["file"]) if record.get("file") is not None else None,
            line=line if isinstance(line, int) and not isinstance(line, bool) else None,
            function=str(record["function"]) if record.get("function") is not None else None,
            traceback=str(record.get("traceback") or ""),
        )

    def summary(self) -> str:
        """``"ValueError: boom (search.py:12, in on_trial_closed)"``: the message's first
        paragraph, at most 1000 characters."""
        message = self.message.strip().split("\n\n", 1)[0]
        if len(message) > 1000:
            message = message[:1000] + "..."
        text = f"{self.type}: {message}" if message else self.type
        if self.file is not None:
            where = f"{self.file}:{self.line}" if self.line is not None else self.file
            if self.function:
                where += f", in {self.function}"
            text += f" ({where})"
        return text
