"""Module-level state of the reuse model: a trial that mutates it must not be seen by the next."""

SEEN: list[int] = []
