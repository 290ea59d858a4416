"""Training and validation inputs: positioned, deterministic, resumable.

Every training input is turned into an endless stream of batches whose order is a pure
function of (seed, data epoch, batch within it), so that training can restart from any
batch count and see exactly the batches an uninterrupted run would have seen:

- arrays (``(x, y)`` or ``(x, y, sample_weights)``; arrays, lists or dicts of arrays) become a
  tf.data pipeline that gathers batches by index, reshuffled per data epoch with a stateless
  seed;
- a ``keras.utils.Sequence`` / ``PyDataset`` (optionally in a ``SequenceAdapter``) is indexed by
  a ``PyDataset`` that maps global batch numbers onto (epoch, permuted batch index);
- a wrapped ``tf.data.Dataset`` is repeated. With a known number of batches a pass (its
  cardinality), a resume at batch ``k * passes + j`` starts pass ``k`` as the run did and skips
  ``j`` batches of it (see :class:`DatasetData`); otherwise its iterator state is saved in
  checkpoints where TensorFlow can save it (else the stream is fast-forwarded with ``skip``).
"""

from __future__ import annotations

import abc
import itertools
import logging
import math
import shutil
import tempfile
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import tensorflow as tf

from pedl.keras._ahead import AheadLoader
from pedl.keras._keras import LEGACY, PyDataset

logger = logging.getLogger("pedl.keras")

_ITERATOR_PREFIX = "data_iterator"
_AHEAD = 2
"""Batches of arrays gathered ahead of training (a fixed depth: see :func:`_without_autotune`)."""


class SequenceAdapter:
    """A ``keras.utils.Sequence`` with the options for loading it in background workers.

    Args:
        sequence: the Sequence (or ``PyDataset``) that holds the data.
        use_multiprocessing: use processes (True) or threads (False) for the workers.
        workers: number of workers; 0 loads batches in the main thread.
        max_queue_size: how many batches the workers may prepare ahead.
    """

    def __init__(
        self,
        sequence: Any,
        use_multiprocessing: bool = False,
        workers: int = 1,
        max_queue_size: int = 10,
    ) -> None:
        if not _is_sequence(sequence):
            raise TypeError(
                f"SequenceAdapter expects a keras.utils.Sequence, got {type(sequence).__name__}"
            )
        if workers < 0:
            raise ValueError(f"workers must be >= 0, got {workers}")
        if max_queue_size < 1:
            raise ValueError(f"max_queue_size must be >= 1, got {max_queue_size}")
        self.sequence = sequence
        self.use_multiprocessing = use_multiprocessing
        self.workers = workers
        self.max_queue_size = max_queue_size


class KerasDataAdapter(SequenceAdapter):
    """The PEDL 0.x (and Determined 2020) name of :class:`SequenceAdapter`.

    Same arguments; the Sequence may also be given as ``data=`` (that era's keyword).
    """

    def __init__(
        self,
        sequence: Any = None,
        use_multiprocessing: bool = False,
        workers: int = 1,
        max_queue_size: int = 10,
        *,
        data: Any = None,
    ) -> None:
        if (sequence is None) == (data is None):
            raise TypeError("KerasDataAdapter takes one Sequence: give `sequence` or `data`")
        super().__init__(
            sequence if sequence is not None else data,
            use_multiprocessing=use_multiprocessing,
            workers=workers,
            max_queue_size=max_queue_size,
        )


InputData = PyDataset | tf.data.Dataset | SequenceAdapter | tuple
"""What a data loader may return (Determined's ``InputData``): a Sequence, a wrapped
``tf.data.Dataset``, a :class:`SequenceAdapter`, or ``(x, y)``/``(x, y, sample_weights)``."""


def _is_sequence(obj: Any) -> bool:
    return isinstance(obj, PyDataset)


class InvalidDataError(ValueError):
    """A data loader returned something PEDL cannot train on; the message says what to do."""


class TrainingData(abc.ABC):
    """An endless, positioned stream of training batches."""

    @abc.abstractmethod
    def fit_input(self, start_batch: int) -> Any:
        """What to pass to ``model.fit(x=...)`` so that training starts at ``start_batch``."""

    @abc.abstractmethod
    def first_batch(self) -> Any:
        """One batch, to build the model's variables before restoring a checkpoint."""

    @property
    @abc.abstractmethod
    def batches_per_pass(self) -> int | None:
        """Batches in one pass over the data, when known."""

    def on_fit_iterator(self, iterator: Any) -> None:  # noqa: B027
        """Called with the iterator that model.fit created, before its first batch."""

    def close(self) -> None:  # noqa: B027
        """Called once ``fit`` has returned: end what loads batches in the background."""

    def worker_batches(self, start_batch: int) -> Iterator[Any]:
        """This worker's batches from global batch ``start_batch`` on (a multi-worker trial
        iterates them itself instead of calling ``fit``)."""
        return iter(self.fit_input(start_batch))

    def save(self, directory: Path) -> dict[str, Any]:
        """Write state beyond the batch count; return what to store in the trial state."""
        return {}

    def restore(self, directory: Path, state: dict[str, Any]) -> None:  # noqa: B027
        """Prepare to continue from a checkpoint written by ``save``."""


class ArrayData(TrainingData):
    def __init__(
        self,
        x: Any,
        y: Any,
        sample_weight: Any,
        *,
        batch_size: int,
        shuffle: bool,
        seed: int,
        rank: int = 0,
        size: int = 1,
    ) -> None:
        """``batch_size`` is the global batch; with ``size`` workers, worker ``rank`` takes
        the records ``rank, rank + size, ...`` of each global batch."""
        self._rank = rank
        self._size = size
        self._arrays = _as_tuple_structure(
            (x, y) if sample_weight is None else (x, y, sample_weight)
        )
        lengths = {len(a) for a in tf.nest.flatten(self._arrays)}
        if len(lengths) != 1:
            raise InvalidDataError(
                f"the arrays of the training data have different lengths: {sorted(lengths)}"
            )
        self._n = lengths.pop()
        if self._n == 0:
            raise InvalidDataError("the training data is empty")
        self._batch_size = batch_size
        self._shuffle = shuffle
        self._seed = seed

    @property
    def batches_per_pass(self) -> int:
        return math.ceil(self._n / self._batch_size)

    def first_batch(self) -> Any:
        return tf.nest.map_structure(lambda a: a[: self._batch_size], self._arrays)

    def fit_input(self, start_batch: int) -> tf.data.Dataset:
        n, batch_size, shuffle, seed = self._n, self._batch_size, self._shuffle, self._seed
        rank, size = self._rank, self._size
        start_epoch, start_in_epoch = divmod(start_batch, self.batches_per_pass)
        constants = tf.nest.map_structure(tf.constant, self._arrays)

        # do_not_convert: these are plain graph code; autograph's conversion would cost
        # ~0.3 s on the way to the first batch.
        @tf.autograph.experimental.do_not_convert
        def epoch_batches(epoch: tf.Tensor) -> tf.data.Dataset:
            if shuffle:
                keys = tf.random.stateless_uniform(
                    [n], seed=tf.stack([tf.constant(seed, tf.int64), epoch])
                )
                order = tf.argsort(keys, stable=True)
            else:
                order = tf.range(n)
            batches = tf.data.Dataset.from_tensor_slices(order).batch(batch_size)
            skip = tf.where(tf.equal(epoch, start_epoch), start_in_epoch, 0)
            return batches.skip(tf.cast(skip, tf.int64))

        @tf.autograph.experimental.do_not_convert
        def gather(indices: tf.Tensor) -> Any:
            return tf.nest.map_structure(lambda c: tf.gather(c, indices), constants)

        @tf.autograph.experimental.do_not_convert
        def own_part(indices: tf.Tensor) -> tf.Tensor:
            return indices[rank::size]

        epochs = tf.data.Dataset.range(start_epoch, np.iinfo(np.int64).max)
        indices = epochs.flat_map(epoch_batches)
        if size > 1:
            indices = indices.map(own_part)
        return indices.map(gather).prefetch(_AHEAD).with_options(_without_autotune())


class _PositionedSequence(PyDataset):
    """Endless view of a Sequence starting at a global batch number, in a seeded order."""

    def __init__(
        self,
        sequence: Any,
        start_batch: int,
        *,
        shuffle: bool,
        seed: int,
        workers: int,
        use_multiprocessing: bool,
        max_queue_size: int,
    ) -> None:
        if not LEGACY:  # Keras 2's Sequence takes its loading options in fit()
            # Keras loads nothing ahead (its loader would outlive fit): the workers are ours.
            super().__init__(workers=0)
        self._in_thread = workers == 0 or LEGACY
        self._sequence = sequence
        self._start = start_batch
        self._shuffle = shuffle
        self._seed = seed
        self._orders: dict[int, np.ndarray] = {}
        self._lock = threading.Lock()
        self._last_epoch = (start_batch // len(sequence)) if len(sequence) else 0
        self._closed = False
        # As Keras: one thread loads in the pipeline's own thread; more, or processes, ahead.
        ahead = not LEGACY and (workers > 1 or (workers > 0 and use_multiprocessing))
        self._ahead = (
            AheadLoader(
                sequence,
                self._position,
                workers=workers,
                processes=use_multiprocessing,
                depth=max_queue_size,
            )
            if ahead
            else None
        )

    @property
    def num_batches(self) -> int | None:
        return None

    def _order(self, epoch: int) -> np.ndarray:
        with self._lock:
            order = self._orders.get(epoch)
            if order is None:
                n = len(self._sequence)
                if self._shuffle:
                    order = np.random.default_rng([self._seed, epoch]).permutation(n)
                else:
                    order = np.arange(n)
                self._orders = {e: o for e, o in self._orders.items() if e >= epoch - 1}
                self._orders[epoch] = order
            return order

    def _position(self, index: int) -> int:
        epoch, in_epoch = divmod(self._start + index, len(self._sequence))
        return int(self._order(epoch)[in_epoch])

    def __getitem__(self, index: int) -> Any:
        if self._closed:
            raise RuntimeError("the trial's training has ended: its batches are no longer read")
        if self._ahead is not None:
            return self._ahead.get(index)
        epoch = (self._start + index) // len(self._sequence)
        if epoch > self._last_epoch and self._in_thread:
            self._last_epoch = epoch
            self._sequence.on_epoch_end()
        return self._sequence[self._position(index)]

    def close(self) -> None:
        """Stop feeding fit's data pipeline and end the workers that load items ahead.

        fit's pipeline outlives fit: when fit stops mid-epoch, as a trial's does, Keras keeps
        its tf.data iterator in a reference cycle until a garbage collection, and meanwhile
        tf.data's prefetching may go on calling this Sequence (the user's loading code, beside
        the next trial of a warm worker or a local search). Once closed, a call fails at once,
        which ends the prefetching."""
        self._closed = True
        if self._ahead is not None:
            self._ahead.close()

    def __len__(self) -> int:  # pragma: no cover - Keras uses num_batches
        raise TypeError("an endless sequence has no length")


class SequenceData(TrainingData):
    def __init__(
        self,
        adapter: SequenceAdapter,
        *,
        shuffle: bool,
        seed: int,
        rank: int = 0,
        size: int = 1,
    ) -> None:
        """With ``size`` workers a global batch is ``size`` items of the Sequence: global
        batch ``g`` of worker ``rank`` is item ``g * size + rank`` of the seeded order."""
        if len(adapter.sequence) == 0:
            raise InvalidDataError("the training Sequence is empty (len() == 0)")
        self._adapter = adapter
        self._shuffle = shuffle
        self._seed = seed
        self._rank = rank
        self._size = size
        self._fit_inputs: list[_PositionedSequence] = []

    @property
    def batches_per_pass(self) -> int:
        return max(1, len(self._adapter.sequence) // self._size)

    def close(self) -> None:
        while self._fit_inputs:
            self._fit_inputs.pop().close()

    def worker_batches(self, start_batch: int) -> Iterator[Any]:
        items = _PositionedSequence(
            self._adapter.sequence,
            0,
            shuffle=self._shuffle,
            seed=self._seed,
            workers=0,
            use_multiprocessing=False,
            max_queue_size=1,
        )
        batch = start_batch
        while True:
            yield items[batch * self._size + self._rank]
            batch += 1

    def first_batch(self) -> Any:
        return self._adapter.sequence[0]

    def fit_input(self, start_batch: int) -> Any:
        a = self._adapter
        if LEGACY:
            # Keras 2 reads a Sequence's len() (an endless one has none): its batches go to
            # fit as a generator, loaded in the training thread.
            items = _PositionedSequence(
                a.sequence,
                start_batch,
                shuffle=self._shuffle,
                seed=self._seed,
                workers=0,
                use_multiprocessing=False,
                max_queue_size=1,
            )
            self._fit_inputs.append(items)
            return (items[index] for index in itertools.count())
        items = _PositionedSequence(
            a.sequence,
            start_batch,
            shuffle=self._shuffle,
            seed=self._seed,
            workers=a.workers,
            use_multiprocessing=a.use_multiprocessing,
            max_queue_size=a.max_queue_size,
        )
        self._fit_inputs.append(items)
        # The pipeline fit would build from the Sequence (Keras's own adapter: the same
        # batches, standardized and typed as fit does), without tf.data's autotuning.
        from keras.src.trainers.data_adapters.py_dataset_adapter import PyDatasetAdapter

        return PyDatasetAdapter(items).get_tf_dataset().with_options(_without_autotune())


class DatasetData(TrainingData):
    """A wrapped ``tf.data.Dataset``, repeated.

    Where its number of batches a pass is known, a resume needs no saved iterator: a
    ``shuffle`` that reshuffles each pass draws that pass's seeds from its dataset's seed
    generator when the pass's iterator starts, so starting (and pulling one batch of) ``k``
    throwaway passes leaves the generators as ``k`` passes left them; pass ``k`` then starts
    as it did and ``skip`` drops the ``j`` batches already trained (at most one pass of input
    work, no training). TensorFlow's saved iterator state is not used there: restored at or
    near the end of a pass it starts the next pass with the wrong seeds (tensorflow#48178;
    measured on the resume test's pipeline, at the last batch of a pass and, with a
    ``prefetch`` at its end, one or two batches before, every time).
    """

    def __init__(self, dataset: tf.data.Dataset) -> None:
        self.dataset = dataset
        """The dataset the data loader returned."""
        self._dataset = dataset
        self._iterator: Any = None
        self._restore_from: Path | None = None
        self._warned = False

    @property
    def batches_per_pass(self) -> int | None:
        cardinality = int(self._dataset.cardinality())
        return cardinality if cardinality > 0 else None

    def first_batch(self) -> Any:
        """Zeros of the shape and type of one batch, where the element spec gives them.

        Iterating the dataset here would start its first pass: a ``shuffle`` that reshuffles
        each pass would then give training its second order, not the order ``fit`` gives.
        """
        zeros = _zeros_like_spec(self._dataset.element_spec)
        if zeros is not None:
            return zeros
        for batch in self._dataset.take(1):
            return batch
        raise InvalidDataError("the training dataset is empty")

    def fit_input(self, start_batch: int) -> tf.data.Dataset:
        per_pass = self.batches_per_pass
        if per_pass is not None:
            passes, offset = divmod(start_batch, per_pass)
            for _ in range(passes):
                next(iter(self._dataset))  # the pass's seeds drawn, as the run drew them
            repeated = self._dataset.repeat()
            return repeated.skip(offset) if offset else repeated
        # Its iterator state is saved: no thread may run ahead of fit while it is.
        repeated = self._dataset.repeat().with_options(_no_injected_prefetch())
        if start_batch and self._restore_from is None:
            return repeated.skip(start_batch)
        return repeated

    def on_fit_iterator(self, iterator: Any) -> None:
        self._iterator = iterator
        if self._restore_from is not None:
            tf.train.Checkpoint(iterator=iterator).read(
                str(self._restore_from / _ITERATOR_PREFIX)
            ).assert_consumed()
            shutil.rmtree(self._restore_from, ignore_errors=True)
            self._restore_from = None

    def save(self, directory: Path) -> dict[str, Any]:
        if self.batches_per_pass is not None:
            return {"iterator_saved": False, "positioned_by": "passes"}
        if self._iterator is None:
            return {"iterator_saved": False}
        try:
            tf.train.Checkpoint(iterator=self._iterator).write(str(directory / _ITERATOR_PREFIX))
        except (tf.errors.FailedPreconditionError, tf.errors.UnimplementedError) as e:
            if not self._warned:
                logger.warning(
                    "TensorFlow cannot save the state of this dataset's iterator (%s); "
                    "on resume PEDL skips the batches already trained instead",
                    str(e).splitlines()[0],
                )
                self._warned = True
            return {"iterator_saved": False}
        return {"iterator_saved": True}

    def restore(self, directory: Path, state: dict[str, Any]) -> None:
        if state.get("iterator_saved") and self.batches_per_pass is None:
            # The checkpoint directory may be temporary (a download): keep a copy until the
            # iterator exists and can be restored.
            local = Path(tempfile.mkdtemp(prefix="pedl-iterator-"))
            for file in directory.glob(f"{_ITERATOR_PREFIX}*"):
                shutil.copy2(file, local / file.name)
            self._restore_from = local


def _no_injected_prefetch() -> tf.data.Options:
    """Options without tf.data's injected prefetch (on by default: a ``prefetch`` added after
    the pipeline's last step). Its thread runs ahead of ``fit`` while the iterator's state is
    saved, and then the state restored depends on how far it got: measured on the resume
    test's pipeline (``shuffle(50, seed=3).batch(16)``, repeated), a save after 12 batches
    restored another order in 3 of 31 tries under load, and the checkpoint's size varied from
    try to try; without it, 80 of 80 restored the same order and the size never varied."""
    options = tf.data.Options()
    options.experimental_optimization.inject_prefetch = False
    return options


def _without_autotune() -> tf.data.Options:
    """Options without tf.data's autotuning, for the pipelines PEDL builds itself.

    Its thread outlives ``fit``: a trial's ``fit`` stops mid-pass, Keras keeps the iterator
    in a reference cycle, and on a busy machine the collection that frees it (a warm worker's
    clean-up between trials, a local search's next trial, the process's exit) may wait for
    that thread, seconds to a minute (gdb: in the iterator's destructor, while the autotune
    thread sleeps out its optimization period). ``bench/p8_leftover_iterator.py``, this
    pipeline for arrays beside three busy processes: 10.6 and 31.7 s in 2 of 8 collections
    with ``prefetch(AUTOTUNE)``, at most 1.26 s without autotuning."""
    options = tf.data.Options()
    options.autotune.enabled = False
    return options


def _zeros_like_spec(spec: Any) -> Any:
    """A batch of zeros for ``spec`` (the batch size its first axis gives, else 1), or None
    when a component is not a dense tensor whose other axes are known."""
    specs = tf.nest.flatten(spec)
    if not all(isinstance(s, tf.TensorSpec) and s.shape.rank for s in specs):
        return None
    if any(None in s.shape.as_list()[1:] for s in specs):
        return None
    return tf.nest.map_structure(
        lambda s: tf.zeros([s.shape[0] or 1, *s.shape.as_list()[1:]], s.dtype), spec
    )


def _as_tuple_structure(data: Any) -> Any:
    """Lists of arrays become tuples, so tf.data keeps them as separate inputs."""
    if isinstance(data, list):
        return tuple(_as_tuple_structure(d) for d in data)
    if isinstance(data, tuple):
        return tuple(_as_tuple_structure(d) for d in data)
    if isinstance(data, dict):
        return {k: _as_tuple_structure(v) for k, v in data.items()}
    return np.asarray(data)


def make_training_data(
    loader: Any,
    *,
    is_wrapped_dataset: Callable[[Any], bool],
    batch_size: Callable[[], int],
    shuffle: bool,
    seed: int,
    fit_workers: int,
    fit_use_multiprocessing: bool,
    fit_max_queue_size: int,
    rank: int = 0,
    size: int = 1,
) -> TrainingData:
    """Turn what ``build_training_data_loader`` returned into a positioned stream.

    With ``size`` > 1 workers, ``batch_size`` gives the global batch and worker ``rank``
    gets its share of each (see :class:`ArrayData` and :class:`SequenceData`; a wrapped
    dataset was sharded by ``wrap_dataset``)."""
    if isinstance(loader, SequenceAdapter):
        return SequenceData(loader, shuffle=shuffle, seed=seed, rank=rank, size=size)
    if _is_sequence(loader):
        adapter = SequenceAdapter(
            loader,
            use_multiprocessing=fit_use_multiprocessing,
            workers=fit_workers,
            max_queue_size=fit_max_queue_size,
        )
        return SequenceData(adapter, shuffle=shuffle, seed=seed, rank=rank, size=size)
    if isinstance(loader, tf.data.Dataset):
        _check_wrapped(loader, is_wrapped_dataset, "build_training_data_loader")
        return DatasetData(loader)
    if isinstance(loader, tuple) and len(loader) in (2, 3):
        x, y, *rest = loader
        return ArrayData(
            x,
            y,
            rest[0] if rest else None,
            batch_size=batch_size(),
            shuffle=shuffle,
            seed=seed,
            rank=rank,
            size=size,
        )
    raise InvalidDataError(_unsupported("build_training_data_loader", loader))


def make_validation_input(
    loader: Any,
    *,
    is_wrapped_dataset: Callable[[Any], bool],
    batch_size: Callable[[], int],
    rank: int = 0,
    size: int = 1,
) -> dict[str, Any]:
    """Keyword arguments for ``model.evaluate`` from ``build_validation_data_loader``'s result.

    With ``size`` > 1 workers, ``x`` is this worker's share of the validation data, so that
    every record is evaluated by exactly one worker: records ``rank, rank + size, ...`` of
    arrays, items ``rank, rank + size, ...`` of a Sequence (an iterable then); a wrapped
    dataset was sharded by ``wrap_dataset``."""
    if size > 1 and not isinstance(loader, tf.data.Dataset):
        return {"x": _shard_validation(loader, batch_size(), rank, size)}
    if isinstance(loader, SequenceAdapter):
        seq = loader.sequence
        seq.workers = loader.workers
        seq.use_multiprocessing = loader.use_multiprocessing
        seq.max_queue_size = loader.max_queue_size
        return {"x": seq}
    if _is_sequence(loader):
        return {"x": loader}
    if isinstance(loader, tf.data.Dataset):
        _check_wrapped(loader, is_wrapped_dataset, "build_validation_data_loader")
        return {"x": loader}
    if isinstance(loader, tuple) and len(loader) in (2, 3):
        # Built once and reused by every validation (each gets a fresh iterator), in order.
        arrays = _as_tuple_structure(loader)
        lengths = {len(a) for a in tf.nest.flatten(arrays)}
        if len(lengths) != 1:
            raise InvalidDataError(
                f"the arrays of the validation data have different lengths: {sorted(lengths)}"
            )
        return {"x": tf.data.Dataset.from_tensor_slices(arrays).batch(batch_size())}
    raise InvalidDataError(_unsupported("build_validation_data_loader", loader))


class _SequenceShard:
    """Items ``rank, rank + size, ...`` of a Sequence, iterable again and again."""

    def __init__(self, sequence: Any, rank: int, size: int) -> None:
        self._sequence = sequence
        self._rank = rank
        self._size = size

    def __iter__(self) -> Iterator[Any]:
        for index in range(self._rank, len(self._sequence), self._size):
            yield self._sequence[index]

    def empty_batch(self) -> Any:
        """A batch of no records like the Sequence's (its first item's, sliced), or None
        when the Sequence is empty."""
        if len(self._sequence) == 0:
            return None
        return tf.nest.map_structure(lambda a: np.asarray(a)[:0], self._sequence[0])


def empty_batch(data: Any) -> Any:
    """A batch of no records with the structure, types and inner shapes of the batches of
    ``data`` (a worker's share of the validation data, see :func:`make_validation_input`), for
    a worker whose share has none; None where they are unknown without a batch."""
    if isinstance(data, _SequenceShard):
        return data.empty_batch()
    if isinstance(data, tf.data.Dataset):
        zeros = _zeros_like_spec(data.element_spec)
        return None if zeros is None else tf.nest.map_structure(lambda a: a[:0], zeros)
    return None


def _shard_validation(loader: Any, batch_size: int, rank: int, size: int) -> Any:
    if isinstance(loader, SequenceAdapter):
        return _SequenceShard(loader.sequence, rank, size)
    if _is_sequence(loader):
        return _SequenceShard(loader, rank, size)
    if isinstance(loader, tuple) and len(loader) in (2, 3):
        arrays = _as_tuple_structure(loader)
        lengths = {len(a) for a in tf.nest.flatten(arrays)}
        if len(lengths) != 1:
            raise InvalidDataError(
                f"the arrays of the validation data have different lengths: {sorted(lengths)}"
            )
        records = tf.data.Dataset.from_tensor_slices(arrays).shard(size, rank)
        return records.batch(batch_size)
    raise InvalidDataError(_unsupported("build_validation_data_loader", loader))


def _check_wrapped(dataset: Any, is_wrapped: Callable[[Any], bool], where: str) -> None:
    if not is_wrapped(dataset):
        raise InvalidDataError(
            f"{where} returned a tf.data.Dataset that was not wrapped: call "
            "`dataset = self.context.wrap_dataset(dataset)` right after creating it, and "
            "return that or a dataset made from it (PEDL needs it to shard the data across "
            "slots)"
        )


def _unsupported(where: str, loader: Any) -> str:
    return (
        f"{where} returned {type(loader).__name__}; expected (x, y) or (x, y, sample_weights) "
        "with arrays, lists or dicts of arrays, a keras.utils.Sequence / PyDataset, a "
        "SequenceAdapter, or a tf.data.Dataset wrapped with context.wrap_dataset()"
    )
