"""A Ray cluster on this machine owned by a test: a head with no CPU and two 1-CPU worker
nodes on loopback, HOME under the test's directory and Ray's temporary directory a fresh one
of the test's (removed after), every Ray
process stopped by the test (``Cluster.shutdown``; never ``ray stop``, which stops every Ray
process of the machine)."""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

HEALTH_CHECK = {
    "health_check_period_ms": 500,
    "health_check_timeout_ms": 500,
    "health_check_failure_threshold": 3,
}
"""A lost node is found dead in about 2 s (the default takes 15 s)."""


@contextlib.contextmanager
def ray_cluster(base: Path, nodes: int = 2) -> Iterator[Any]:
    """A started :class:`ray.cluster_utils.Cluster` with ``nodes`` worker nodes of 1 CPU each
    (``pedl_nodes``, in order; the custom resources ``node0``, ``node1``, ... of 1), shut down
    after."""
    cluster_utils = pytest.importorskip("ray.cluster_utils")
    home = base / "home"
    home.mkdir(parents=True, exist_ok=True)
    # Ray's socket paths (<temp>/session_<date>_<pid>/sockets/plasma_store) must stay under
    # 108 bytes, which pytest's directories pass: a short directory of the test's own under
    # /tmp, removed with the cluster.
    temp = Path(tempfile.mkdtemp(prefix="pedl-ray-"))
    (temp / "ray").mkdir()
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HOME", str(home))
        patch.setenv("RAY_TMPDIR", str(temp))
        patch.setenv("RAY_USAGE_STATS_ENABLED", "0")
        patch.delenv("RAY_ADDRESS", raising=False)
        cluster = cluster_utils.Cluster(
            initialize_head=True,
            head_node_args={
                "num_cpus": 0,
                "include_dashboard": False,
                "temp_dir": str(temp),
                "_system_config": HEALTH_CHECK,
            },
        )
        try:
            # the worker nodes in order (``worker_nodes`` is a set)
            cluster.pedl_nodes = [
                cluster.add_node(num_cpus=1, resources={f"node{index}": 1})
                for index in range(nodes)
            ]
            cluster.wait_for_nodes()
            yield cluster
        finally:
            cluster.shutdown()
            shutil.rmtree(temp, ignore_errors=True)
