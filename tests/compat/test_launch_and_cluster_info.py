"""Determined 0.38's launchers (``determined.launch.*``) run as modules, and
``det.get_cluster_info()`` has 0.38's fields."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys

import determined as det
import pytest

from pedl import core
from tests.waits import scaled

ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}


def launch(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", *args], capture_output=True, text=True, env=ENV, timeout=scaled(60)
    )


def test_tensorflow_launcher_runs_the_command_and_gives_its_status() -> None:
    code = "import sys; print('trained'); sys.exit(3)"
    done = launch("determined.launch.tensorflow", "--", sys.executable, "-c", code)
    assert (done.returncode, done.stdout) == (3, "trained\n"), done.stderr


def test_wrap_rank_prefixes_each_line() -> None:
    code = "import sys; print('a'); print('b'); print('c', file=sys.stderr)"
    done = launch("determined.launch.wrap_rank", "2", "--", sys.executable, "-c", code)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "[rank=2] a\n[rank=2] b\n"
    assert "[rank=2] c\n" in done.stderr


@pytest.mark.parametrize(
    ("module", "words"),
    [("torch_distributed", "PyTorch"), ("deepspeed", "DeepSpeed"), ("horovod", "tf.distribute")],
)
def test_other_launchers_refuse_naming_the_alternative(module: str, words: str) -> None:
    done = launch(f"determined.launch.{module}", "--", "python3", "train.py")
    assert done.returncode != 0
    last = done.stderr.strip().splitlines()[-1]
    assert "is a Determined feature that PEDL does not provide" in last
    assert words in last and "AttributeError" not in done.stderr


def test_cluster_info_has_determined_038s_fields() -> None:
    assert det.get_cluster_info() is None  # outside a trial
    config = {
        "name": "x",
        "data": {"url": "s3://bucket/iris.csv"},
        "searcher": {"name": "single", "metric": "x"},
        "entrypoint": "python3 train.py",
    }
    context = core.detached_context(config, hparams={"lr": 0.1})
    with core.use_context(context):
        info = det.get_cluster_info()
    assert info is not None
    assert info.task_type == "TRIAL"
    assert info.trial.hparams == {"lr": 0.1}
    assert info.trial.trial_id == context.info.trial_id
    assert info.trial._config["searcher"]["metric"] == "x"
    assert info.user_data == {"url": "s3://bucket/iris.csv"}
    assert info.latest_checkpoint is None
    assert info.container_rank == 0 and info.container_addrs == [os.uname().nodename]
    assert info.task_id == f"{context.info.experiment_id}.{context.info.trial_id}"
    for name in (
        "master_url",
        "cluster_id",
        "agent_id",
        "slot_ids",
        "allocation_id",
        "session_token",
        "container_slot_counts",
        "gpu_uuids",
    ):
        assert hasattr(info, name), name
    assert det.LOG_FORMAT == "%(levelname)s: [%(process)s] %(name)s: %(message)s"


def test_cluster_info_on_several_slots_makes_each_worker_a_container_of_one_slot(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """PEDL starts one process per slot: to a script each is a container of one slot, so a
    launcher written as 0.38's distributed tutorial starts one worker in each, and its workers
    reach the chief at the first address."""
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    config = {"name": "x", "searcher": {"name": "single", "metric": "x"}, "entrypoint": "t.py"}
    base = core.detached_context(config, hparams={})
    seen = []
    for rank, dist in (
        (1, core.DistributedContext(rank=1, size=2, local_rank=1, local_size=2)),
        (
            1,
            core.DistributedContext(
                rank=1, size=2, cross_rank=1, cross_size=2, chief_ip="10.1.2.3"
            ),
        ),
    ):
        with core.use_context(dataclasses.replace(base, distributed=dist)):
            info = det.get_cluster_info()
        assert info is not None
        assert (info.container_rank, info.slot_ids) == (rank, [0])
        assert info.container_slot_counts == [1, 1]
        seen.append(info.container_addrs)
    assert seen == [["127.0.0.1", "127.0.0.1"], ["10.1.2.3", ""]]
    with core.use_context(base):
        alone = det.get_cluster_info()
    assert alone is not None and alone.slot_ids == [0] and alone.container_slot_counts == [1]
