"""The error a searcher raises when it is driven out of order."""

from __future__ import annotations


class SearcherError(Exception):
    """An event that the searcher cannot accept (unknown request id, wrong order, bad state)."""
