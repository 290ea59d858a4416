"""The warning for a training dataset whose resume relies on TensorFlow's saved iterator at
the end of a reshuffling pass (tensorflow#48178; see pedl.keras._data.DatasetData)."""

from __future__ import annotations

import logging

import pytest
import tensorflow as tf

from pedl.keras._shuffle_check import reshuffles_at_unknown_pass_ends, warn_if_inexact_at_pass_ends

DATA = tf.data.Dataset.range(20)


def above_two(x: tf.Tensor) -> tf.Tensor:
    return x > 2


@pytest.mark.parametrize(
    ("dataset", "inexact"),
    [
        (DATA.shuffle(5).batch(2), False),  # known length: PEDL positions it by passes
        (DATA.shuffle(5).filter(above_two).batch(2), True),  # unknown length, reshuffled
        (DATA.shuffle(5).repeat().batch(2), True),  # its own repeat of a reshuffled pass
        (DATA.repeat().shuffle(5).batch(2), False),  # one endless shuffle: no pass ends
        (DATA.shuffle(5, reshuffle_each_iteration=False).filter(above_two).batch(2), False),
        (
            DATA.filter(above_two)
            .shuffle(5)
            .batch(2)
            .apply(tf.data.experimental.assert_cardinality(9)),
            False,  # the docs' way out: a known length
        ),
    ],
)
def test_which_datasets_are_warned_about(dataset: tf.data.Dataset, inexact: bool) -> None:
    assert reshuffles_at_unknown_pass_ends(dataset) is inexact


def test_the_warning_names_the_cause_and_the_ways_out(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="pedl.keras"):
        assert warn_if_inexact_at_pass_ends(DATA.shuffle(5).filter(above_two).batch(2))
        assert not warn_if_inexact_at_pass_ends(DATA.shuffle(5).batch(2))
    (record,) = caplog.records
    for words in ("tensorflow#48178", "assert_cardinality", "reshuffle_each_iteration=False"):
        assert words in record.getMessage()
