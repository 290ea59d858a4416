"""Determined 0.38's ``DistributedContext.from_tf_config()``: ``TF_CONFIG``'s workers as
ranks, and the context and strategy through the ``determined`` name."""

from __future__ import annotations

import json

import determined
import pytest
from hypothesis import given
from hypothesis import strategies as st

from pedl import core
from pedl.script._distributed import tf_config_ranks
from tests.core.test_distributed import ranks


@given(st.integers(2, 16).flatmap(lambda n: st.tuples(st.just(n), st.integers(0, n - 1))))
def test_a_multi_worker_tf_config_gives_one_machine_per_worker(n_index: tuple[int, int]) -> None:
    n, index = n_index
    workers = [f"host{i}.example:{2222 + i}" for i in range(n)]
    config = json.dumps(
        {"cluster": {"worker": workers}, "task": {"type": "worker", "index": index}}
    )
    args = tf_config_ranks(config)
    assert args is not None
    made = core.DistributedContext(**args)
    assert ranks(made) == (index, n, 0, 1, index, n, n, "host0.example")


def test_tf_config_with_one_worker_or_another_task_type() -> None:
    assert tf_config_ranks(None) is None
    one = {"cluster": {"worker": ["a:1"]}, "task": {"type": "worker", "index": 0}}
    assert tf_config_ranks(json.dumps(one)) is None
    with pytest.raises(RuntimeError, match="task type 'ps'"):
        tf_config_ranks(json.dumps({"cluster": {}, "task": {"type": "ps", "index": 0}}))


def test_from_tf_config_through_the_determined_alias(monkeypatch: pytest.MonkeyPatch) -> None:
    """Determined 0.38's TF-Keras scripts call det.core.DistributedContext.from_tf_config()
    and get a context and a strategy."""
    monkeypatch.delenv("TF_CONFIG", raising=False)
    tf = pytest.importorskip("tensorflow")
    distributed, strategy = determined.core.DistributedContext.from_tf_config()
    assert isinstance(distributed, core.DistributedContext)
    assert distributed.get_size() == 1
    assert strategy is tf.distribute.get_strategy()
