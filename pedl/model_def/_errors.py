"""The errors a model definition can raise: user-facing messages, chained to their cause."""

from __future__ import annotations


class ModelDefError(Exception):
    """A model definition cannot be packaged, unpacked or loaded.

    The message is written for the user (what is wrong, where, and what to do); the original
    exception, if any, is chained as ``__cause__``.
    """


class UnsafeArchiveError(ModelDefError):
    """An archive holds a member that must not be unpacked (escaping path, link, device, bomb).

    The message names the offending member.
    """


class ArchiveLimitError(UnsafeArchiveError):
    """An archive passes one of the limits it is checked against (a zip-bomb or resource
    guard rather than an unsafe member): its compressed size, its unpacked size, its member
    count, the size of its extended headers or the length of a member's path.

    ``limit`` names the keyword argument of :func:`~pedl.model_def.check_archive` that was
    passed (``"max_bytes"``, ``"max_unpacked_bytes"``, ``"max_members"``,
    ``"max_header_bytes"`` or ``"max_path_chars"``), so that a caller can tell the user which
    of its own settings to change.
    """

    def __init__(self, message: str, *, limit: str) -> None:
        super().__init__(message)
        self.limit = limit
