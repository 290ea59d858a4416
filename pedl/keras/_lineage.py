"""The datasets a ``tf.data.Dataset`` was made from."""

from __future__ import annotations

from typing import Any


def dataset_lineage(dataset: Any) -> list[Any]:
    """``dataset`` and every dataset it was made from (``shuffle``, ``batch``, ``zip``, ...)."""
    found: list[Any] = []
    pending = [dataset]
    seen: set[int] = set()
    while pending:
        current = pending.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        found.append(current)
        inputs = getattr(current, "_inputs", None)
        if callable(inputs):
            pending.extend(inputs())
    return found
