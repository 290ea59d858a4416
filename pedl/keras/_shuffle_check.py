"""Finding a ``Dataset.shuffle`` whose order no restart can reproduce.

PEDL seeds TensorFlow with the trial seed before it calls the data loaders, so a
``.shuffle(buffer)`` without a seed made there gets a fixed seed and a resumed trial sees the
same order. A shuffle made before that (at import time of the model definition, say) with no
seed gets TensorFlow's nondeterministic seed (both of its seeds 0): its order
differs in every process, and exact resume cannot hold for it. PEDL then warns, naming the
``.shuffle(...)`` calls without a ``seed=`` in the model definition's code.

And a dataset whose resume relies on TensorFlow's saved iterator at the end of a pass that
reshuffles (its length unknown, or its own ``repeat`` of a reshuffled pass): restored there,
the next pass's order is wrong (tensorflow#48178); PEDL warns, naming the ways out.
"""

from __future__ import annotations

import ast
import logging
from pathlib import Path

import tensorflow as tf

from pedl.keras._lineage import dataset_lineage

logger = logging.getLogger("pedl.keras")


def nondeterministic_shuffles(dataset: tf.data.Dataset) -> int:
    """How many ``shuffle`` steps of ``dataset``'s pipeline have TensorFlow's random seed
    (both seeds 0)."""
    count = 0
    for step in dataset_lineage(dataset):
        seed, seed2 = getattr(step, "_seed", None), getattr(step, "_seed2", None)
        if seed is not None and seed2 is not None and int(seed) == int(seed2) == 0:
            count += 1
    return count


def unseeded_shuffle_calls(code_dir: Path) -> list[str]:
    """``file:line`` of each ``.shuffle(...)`` call without a seed in the Python files."""
    found: list[str] = []
    for path in sorted(code_dir.rglob("*.py")):
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
            continue
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "shuffle"
                and len(node.args) < 2
                and not any(k.arg == "seed" for k in node.keywords)
            ):
                found.append(f"{path.relative_to(code_dir).as_posix()}:{node.lineno}")
    return found


def warn_if_unreproducible(dataset: tf.data.Dataset, code_dir: Path) -> bool:
    """Log a warning (once per call) when the training dataset's order cannot be reproduced;
    return whether it did."""
    if not nondeterministic_shuffles(dataset):
        return False
    calls = unseeded_shuffle_calls(code_dir)
    where = f" at {', '.join(calls)}" if calls else ""
    logger.warning(
        "the training dataset is shuffled with a random seed%s (a .shuffle() without seed= "
        "made before PEDL seeded TensorFlow): its order differs in every run, so a resumed "
        "trial will not see the batches an uninterrupted one would. Pass seed= to .shuffle(), "
        "or build the dataset inside build_training_data_loader()",
        where,
    )
    return True


def _reshuffles(dataset: tf.data.Dataset) -> bool:
    return any(getattr(d, "_reshuffle_each_iteration", False) for d in dataset_lineage(dataset))


def reshuffles_at_unknown_pass_ends(dataset: tf.data.Dataset) -> bool:
    """Whether a resume of ``dataset`` relies on TensorFlow's saved iterator at the end of a
    pass that reshuffles: its number of batches is unknown (PEDL then saves the iterator and
    cannot tell where passes end) and it reshuffles each pass, or its own ``repeat`` repeats
    a reshuffling ``shuffle``."""
    cardinality = int(dataset.cardinality())
    if cardinality == tf.data.UNKNOWN_CARDINALITY:
        return _reshuffles(dataset)
    if cardinality == tf.data.INFINITE_CARDINALITY:
        lineage = dataset_lineage(dataset)
        repeats = [d for d in lineage if type(d).__name__.lstrip("_") == "RepeatDataset"]
        return any(_reshuffles(d) for d in repeats)
    return False


def warn_if_inexact_at_pass_ends(dataset: tf.data.Dataset) -> bool:
    """Log a warning when a resume from a checkpoint at the end of one of the training
    dataset's passes may not see the batches an uninterrupted run would; return whether it
    did."""
    if not reshuffles_at_unknown_pass_ends(dataset):
        return False
    logger.warning(
        "the training dataset reshuffles each pass and its number of batches is unknown (a "
        "filter(), or its own repeat()): TensorFlow restores a position saved at the end of a "
        "pass with the next pass's order wrong (tensorflow#48178), so a trial resumed from "
        "such a checkpoint may not see the batches an uninterrupted one would. Give the "
        "batched dataset a known length "
        "(.apply(tf.data.experimental.assert_cardinality(batches))) and leave the repeating "
        "to PEDL, or shuffle with reshuffle_each_iteration=False"
    )
    return True
