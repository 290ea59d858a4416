"""TFKerasTrialContext: every accessor, wrapper and configure_fit merging."""

from __future__ import annotations

from pathlib import Path

import keras
import pytest
import tensorflow as tf

from pedl.keras import FitConfig, TFKerasTrialContext

from .harness import make_run

CONFIG = """
name: ctx
data: {path: /data/digits, shards: 3}
hyperparameters:
  global_batch_size: 32
  lr: 0.1
  optimizer: {name: adam, beta: 0.9}
searcher: {name: single, metric: val_loss, max_length: {batches: 5}}
reproducibility: {experiment_seed: 9}
"""


def make_context(tmp_path: Path, hparams: dict | None = None) -> TFKerasTrialContext:
    values = hparams or {"global_batch_size": 32, "lr": 0.1, "optimizer": {"name": "adam"}}
    return TFKerasTrialContext(make_run(tmp_path, CONFIG, hparams=values).context)


def test_trial_information(tmp_path: Path) -> None:
    ctx = make_context(tmp_path)
    assert ctx.get_hparam("lr") == 0.1
    assert ctx.get_hparam("optimizer") == {"name": "adam"}
    assert ctx.get_hparams() == {"global_batch_size": 32, "lr": 0.1, "optimizer": {"name": "adam"}}
    assert ctx.get_trial_id() == 3
    assert ctx.get_experiment_id() == 2
    assert ctx.get_trial_seed() == 9
    assert ctx.get_data_config() == {"path": "/data/digits", "shards": 3}
    config = ctx.get_experiment_config()
    assert config["name"] == "ctx"
    assert config["searcher"]["metric"] == "val_loss"
    assert config["scheduling_unit"] == 100  # defaults are filled in


def test_get_hparams_returns_a_copy(tmp_path: Path) -> None:
    ctx = make_context(tmp_path)
    ctx.get_hparams()["lr"] = 5
    assert ctx.get_hparam("lr") == 0.1


def test_unknown_hparam_names_the_defined_ones(tmp_path: Path) -> None:
    with pytest.raises(KeyError, match=r"no hyperparameter 'learning_rate'.*global_batch_size, lr"):
        make_context(tmp_path).get_hparam("learning_rate")


def test_batch_sizes(tmp_path: Path) -> None:
    ctx = make_context(tmp_path)
    assert ctx.get_global_batch_size() == 32
    assert ctx.get_per_slot_batch_size() == 32  # one slot


@pytest.mark.parametrize(
    ("hparams", "message"),
    [
        ({"lr": 0.1}, "needs a 'global_batch_size' hyperparameter"),
        ({"global_batch_size": 0}, "positive integer, got 0"),
        ({"global_batch_size": 12.5}, "positive integer, got 12.5"),
        ({"global_batch_size": True}, "positive integer, got True"),
    ],
)
def test_bad_global_batch_size(tmp_path: Path, hparams: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        make_context(tmp_path, hparams).get_global_batch_size()


def test_distributed_context_of_a_single_process(tmp_path: Path) -> None:
    d = make_context(tmp_path).distributed
    assert (d.get_rank(), d.get_size(), d.get_local_rank(), d.get_num_agents()) == (0, 1, 0, 1)
    assert d.gather("x") == ["x"]
    assert d.allgather(7) == [7]
    assert d.broadcast({"a": 1}) == {"a": 1}
    assert d.broadcast_local("y") == "y"
    assert d.allgather_local(3) == [3]
    assert d.gather_local(2) == [2]


def test_wrappers_return_their_argument_and_check_types(tmp_path: Path) -> None:
    ctx = make_context(tmp_path)
    model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    assert ctx.wrap_model(model) is model
    assert ctx.wrapped_models == [model]
    optimizer = keras.optimizers.SGD()
    assert ctx.wrap_optimizer(optimizer) is optimizer
    ds = tf.data.Dataset.range(4)
    wrapped = ctx.wrap_dataset(ds)
    assert ctx.is_wrapped_dataset(wrapped)
    assert not ctx.is_wrapped_dataset(tf.data.Dataset.range(4))
    assert ctx.wrap_dataset(tf.data.Dataset.range(2), shard_dataset=False) is not None
    with pytest.raises(TypeError, match=r"keras\.Model"):
        ctx.wrap_model("model")
    with pytest.raises(TypeError, match="keras optimizer"):
        ctx.wrap_optimizer("adam")
    with pytest.raises(TypeError, match=r"tf\.data\.Dataset"):
        ctx.wrap_dataset([1, 2])


def test_configure_fit_defaults(tmp_path: Path) -> None:
    assert make_context(tmp_path).fit_config == FitConfig()


def test_configure_fit_later_calls_keep_earlier_keys(tmp_path: Path) -> None:
    ctx = make_context(tmp_path)
    ctx.configure_fit(verbose=True, workers=5, class_weight={0: 1.0, 1: 2.0})
    ctx.configure_fit(use_multiprocessing=True)
    ctx.configure_fit(workers=2, shuffle=False, validation_steps=3, max_queue_size=4)
    assert ctx.fit_config == FitConfig(
        verbose=True,
        class_weight={0: 1.0, 1: 2.0},
        workers=2,
        use_multiprocessing=True,
        max_queue_size=4,
        shuffle=False,
        validation_steps=3,
    )


def test_configure_fit_none_resets_class_weight_and_validation_steps(tmp_path: Path) -> None:
    ctx = make_context(tmp_path)
    ctx.configure_fit(class_weight={0: 2.0}, validation_steps=4)
    ctx.configure_fit(verbose=False)
    assert ctx.fit_config.class_weight == {0: 2.0}
    ctx.configure_fit(class_weight=None, validation_steps=None)
    assert ctx.fit_config.class_weight is None
    assert ctx.fit_config.validation_steps is None


def test_experimental_context_exists(tmp_path: Path) -> None:
    assert make_context(tmp_path).experimental is not None
