"""In-memory arrays as a ``keras.utils.Sequence`` of batches: Determined's array adapters.

``ArrayLikeAdapter(x, y, batch_size, sample_weights=None, drop_leftovers=False)`` is
Determined's (0.12 on) and ``InMemorySequence(data, labels, batch_size, sample_weight=None,
drop_leftovers=False)`` its 2020 name with the first era's argument names. Both batch arrays
(NumPy, or pandas ``DataFrame``/``Series``), lists of arrays or dicts of arrays, in order;
PEDL shuffles the order of the batches (not their content) unless
``configure_fit(shuffle=False)``, as ``fit`` does with a Sequence.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from pedl.keras._keras import PyDataset


def _arrays(data: Any) -> Any:
    """``data`` with pandas ``DataFrame``s and ``Series`` (anything with ``to_numpy``, as the
    2020-era examples read their CSV files) as NumPy arrays, inside lists and dicts too."""
    if isinstance(data, np.ndarray):
        return data
    if hasattr(data, "to_numpy"):
        return np.asarray(data.to_numpy())
    if isinstance(data, list | tuple):
        return [_arrays(part) for part in data]
    if isinstance(data, dict):
        return {name: _arrays(part) for name, part in data.items()}
    return data


def _length(data: Any, what: str) -> int:
    if isinstance(data, np.ndarray):
        return len(data)
    if isinstance(data, list | tuple) and data and all(isinstance(a, np.ndarray) for a in data):
        lengths = {len(a) for a in data}
    elif isinstance(data, dict) and data and all(isinstance(a, np.ndarray) for a in data.values()):
        lengths = {len(a) for a in data.values()}
    else:
        raise TypeError(
            f"{what} must be a NumPy array or pandas DataFrame or Series, a list of them or a "
            f"dict of them, got "
            f"{type(data).__name__}"
        )
    if len(lengths) != 1:
        raise ValueError(f"the arrays of {what} have different lengths: {sorted(lengths)}")
    return lengths.pop()


def _slice(data: Any, start: int, end: int) -> Any:
    if isinstance(data, np.ndarray):
        return data[start:end]
    if isinstance(data, dict):
        return {name: array[start:end] for name, array in data.items()}
    return [array[start:end] for array in data]


class ArrayLikeAdapter(PyDataset):
    """Batches of in-memory arrays, as a Sequence.

    Args:
        x: the inputs: an array, a list of arrays (several inputs) or a dict of arrays
            (named inputs).
        y: the targets, in the same forms.
        batch_size: records per batch.
        sample_weights: optional per-record weights.
        drop_leftovers: leave out the last, partial batch.
    """

    def __init__(
        self,
        x: Any,
        y: Any,
        batch_size: int,
        sample_weights: np.ndarray | None = None,
        drop_leftovers: bool = False,
    ) -> None:
        super().__init__()
        x, y = _arrays(x), _arrays(y)
        if sample_weights is not None:
            sample_weights = _arrays(sample_weights)
        n = _length(x, "x")
        if _length(y, "y") != n:
            raise ValueError(f"x has {n} records but y has {_length(y, 'y')}")
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"batch_size must be a positive integer, got {batch_size!r}")
        if batch_size > n:
            raise ValueError(f"batch_size ({batch_size}) is larger than the data ({n} records)")
        if sample_weights is not None and len(sample_weights) != n:
            raise ValueError(
                f"x has {n} records but sample_weights has {len(sample_weights)} entries"
            )
        self.x = x
        self.y = y
        self.sample_weight = sample_weights
        self.batch_size = batch_size
        self.drop_leftovers = drop_leftovers
        self._n = n

    def __len__(self) -> int:
        if self.drop_leftovers:
            return self._n // self.batch_size
        return math.ceil(self._n / self.batch_size)

    def __getitem__(self, index: int) -> tuple[Any, ...]:
        if not 0 <= index < len(self):
            raise IndexError(f"batch {index} out of range (the sequence has {len(self)})")
        start = index * self.batch_size
        end = min(start + self.batch_size, self._n)
        batch = (_slice(self.x, start, end), _slice(self.y, start, end))
        if self.sample_weight is None:
            return batch
        return (*batch, self.sample_weight[start:end])


class InMemorySequence(ArrayLikeAdapter):
    """Determined's 2020 name of :class:`ArrayLikeAdapter`, with that era's argument names."""

    def __init__(
        self,
        data: Any,
        labels: Any,
        batch_size: int,
        sample_weight: np.ndarray | None = None,
        drop_leftovers: bool = False,
    ) -> None:
        super().__init__(data, labels, batch_size, sample_weight, drop_leftovers)
