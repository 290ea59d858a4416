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
