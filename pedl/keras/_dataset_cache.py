"""``context.experimental.cache_train_dataset``: Determined's dataset-caching decorators.

Determined cached the decorated function's dataset on disk through yogadl and served it
shuffled with the trial seed and sharded. PEDL keeps the dataset the function returns in the
trial process's memory (``Dataset.cache()``), keyed by ``(dataset_id, dataset_version)``, so a
trial process that runs several trials builds it once; it is shuffled with the trial seed and
sharded like a dataset passed to ``wrap_dataset``.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import Any

import tensorflow as tf

_cached: dict[tuple[str, str, bool], tf.data.Dataset] = {}
_lock = threading.Lock()
_SHUFFLE_BUFFER_WHEN_UNKNOWN = 10_000


def cached_dataset(
    make_dataset: Callable[[], Any], dataset_id: str, dataset_version: str, training: bool
) -> tf.data.Dataset:
    """The dataset ``make_dataset`` returns, cached in memory under its id and version."""
    key = (dataset_id, dataset_version, training)
    with _lock:
        dataset = _cached.get(key)
    if dataset is None:
        made = make_dataset()
        if not isinstance(made, tf.data.Dataset):
            raise TypeError(
                f"the function decorated with cache_{'train' if training else 'validation'}"
                f"_dataset({dataset_id!r}, {dataset_version!r}) returned "
                f"{type(made).__name__}; it must return a tf.data.Dataset"
            )
        dataset = made.cache()
        with _lock:
            dataset = _cached.setdefault(key, dataset)
    return dataset


def shuffled(dataset: tf.data.Dataset, seed: int, reshuffle_each_iteration: bool) -> Any:
    """Shuffle every element with the trial seed (a full buffer when the size is known)."""
    cardinality = int(dataset.cardinality())
    buffer = cardinality if cardinality > 0 else _SHUFFLE_BUFFER_WHEN_UNKNOWN
    return dataset.shuffle(buffer, seed=seed, reshuffle_each_iteration=reshuffle_each_iteration)


class CacheableDecorator:
    """Makes the decorators ``cache_train_dataset``/``cache_validation_dataset`` return."""

    def __init__(
        self,
        *,
        training: bool,
        seed: int,
        wrap: Callable[[tf.data.Dataset], tf.data.Dataset],
    ) -> None:
        self._training = training
        self._seed = seed
        self._wrap = wrap

    def cache_dataset(
        self,
        dataset_id: str,
        dataset_version: str,
        shuffle: bool,
        skip_shuffle_at_epoch_end: bool,
    ) -> Callable[[Callable[..., Any]], Callable[..., tf.data.Dataset]]:
        def decorator(make_dataset: Callable[..., Any]) -> Callable[..., tf.data.Dataset]:
            @functools.wraps(make_dataset)
            def cached(*args: Any, **kwargs: Any) -> tf.data.Dataset:
                dataset = cached_dataset(
                    lambda: make_dataset(*args, **kwargs),
                    dataset_id,
                    dataset_version,
                    self._training,
                )
                if shuffle:
                    dataset = shuffled(dataset, self._seed, not skip_shuffle_at_epoch_end)
                return self._wrap(dataset)

            return cached

        return decorator
