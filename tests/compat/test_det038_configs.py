"""Determined 0.38's example configs load unchanged (``searcher.max_length`` optional, its
integer form, scripts deciding their own length and batch size); what PEDL cannot run is
refused in one line naming the framework. The configs are copies of 0.38's
(``data/det038_configs/SOURCE.md``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pedl.config import (
    OPEN_LENGTH,
    AdaptiveASHASearcherConfig,
    ConfigError,
    Length,
    load_config,
    parse_config,
)
from pedl.searcher._factory import make_search_method

CONFIGS = Path(__file__).parent / "data" / "det038_configs"
LOADED = sorted(p for d in ("iris_tf_keras", "core_api") for p in (CONFIGS / d).glob("*.yaml"))


@pytest.mark.parametrize("path", LOADED, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_tf_keras_and_framework_free_configs_load(path: Path) -> None:
    config = load_config(path)
    if isinstance(config.searcher, AdaptiveASHASearcherConfig):
        assert config.searcher.length == Length(unit="batches", value=config.searcher.max_time)
    else:
        # No max_length: the script decides how long it trains; its searcher is open-ended.
        assert config.searcher.max_length is None
        assert config.searcher_max_length is None
        assert make_search_method(config) is not None


def test_adaptive_iris_reads_as_determined_does() -> None:
    config = load_config(CONFIGS / "iris_tf_keras" / "adaptive.yaml")
    assert config.searcher.metric == "categorical_accuracy"
    assert (config.searcher_unit, config.searcher_max_length) == ("batches", 6400)
    assert config.entrypoint == "python3 -m determined.launch.tensorflow -- python3 train.py"


@pytest.mark.parametrize(
    ("name", "framework"),
    [("mnist_pytorch_distributed.yaml", "PyTorch"), ("deepspeed_dcgan_mnist.yaml", "DeepSpeed")],
)
def test_out_of_scope_launchers_are_refused_in_one_line(name: str, framework: str) -> None:
    with pytest.raises(ConfigError) as info:
        load_config(CONFIGS / "refused" / name)
    (issue,) = info.value.issues
    assert issue.path == "entrypoint"
    assert framework in issue.message
    assert "PEDL trains TensorFlow and Keras models" in issue.message


SCRIPT = """\
name: x
entrypoint: python3 train.py
hyperparameters: {lr: 0.1}
searcher: {name: single, metric: loss}
"""


def test_integer_max_length_is_a_unitless_length_counted_in_batches() -> None:
    for name in ("single", "grid", "random", "adaptive_asha"):
        extra = ", max_trials: 2" if name in ("random", "adaptive_asha") else ""
        config = parse_config(
            SCRIPT.replace("name: single", f"name: {name}").replace(
                "metric: loss", f"metric: loss, max_length: 100{extra}"
            )
        )
        assert config.searcher.max_length == Length(unit="batches", value=100), name
        assert config.searcher_max_length == 100
    with pytest.raises(ConfigError, match="must be greater than 0"):
        parse_config(SCRIPT.replace("metric: loss", "metric: loss, max_length: 0"))


def test_open_length_searchers_give_the_training_code_the_length() -> None:
    for name, extra in (("single", ""), ("grid", ""), ("random", ", max_trials: 2")):
        config = parse_config(
            SCRIPT.replace("name: single", f"name: {name}").replace("loss", f"loss{extra}")
        )
        method = make_search_method(config)
        assert method._max_length == OPEN_LENGTH  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    "entrypoint",
    [
        None,
        "model_def:IrisTrial",
        "python3 -m determined.launch.horovod --trial model_def:IrisTrial",
    ],
)
def test_a_trial_class_without_max_length_is_refused_naming_the_field(
    entrypoint: str | None,
) -> None:
    text = SCRIPT.replace("entrypoint: python3 train.py\n", "")
    if entrypoint is not None:
        text = f"entrypoint: {entrypoint}\n{text}"
    with pytest.raises(ConfigError) as info:
        parse_config(text)
    (issue,) = info.value.issues
    assert issue.path == "searcher.max_length"
    assert "Trial class" in issue.message and "PEDL needs max_length" in issue.message


def test_a_script_needs_no_global_batch_size_for_epochs() -> None:
    text = SCRIPT + "records_per_epoch: 120\nmin_validation_period: {epochs: 1}\n"
    parse_config(text)
    with pytest.raises(ConfigError, match="global_batch_size"):
        parse_config(
            text.replace("entrypoint: python3 train.py\n", "entrypoint: m:Trial\n").replace(
                "metric: loss", "metric: loss, max_length: {epochs: 2}"
            )
        )


def test_a_partial_checkpoint_storage_is_merged_over_the_default(tmp_path: Path) -> None:
    """Determined merges a block without ``type`` over the cluster's storage; PEDL over the
    master's (local mode's) default, field by field."""
    from pedl.engine import with_default_storage

    text = SCRIPT + "checkpoint_storage:\n  save_trial_latest: 5\n  save_trial_best: 0\n"
    config = with_default_storage(parse_config(text), tmp_path)
    storage = config.checkpoint_storage
    assert (storage.type, storage.host_path) == ("shared_fs", str(tmp_path.resolve()))
    assert (storage.save_trial_latest, storage.save_trial_best) == (5, 0)
    assert parse_config(config.as_dict()) == config  # the merged form is a plain config
    # A block naming its own place keeps it; a complete one is left alone.
    own = parse_config(SCRIPT + "checkpoint_storage: {host_path: /data/ckpt}\n")
    assert with_default_storage(own, tmp_path).checkpoint_storage.host_path == "/data/ckpt"
    full = parse_config(SCRIPT + "checkpoint_storage: {type: shared_fs, host_path: /d}\n")
    assert with_default_storage(full, tmp_path) is full
