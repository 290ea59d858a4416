"""``get_cluster_info()``: what a script learns about the trial it runs as (Determined 0.38's
``det.get_cluster_info()``, with every field 0.38 exposes; those about Determined's containers
get PEDL's nearest value, documented on each)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from pedl import core


@dataclass(frozen=True)
class TrialClusterInfo:
    """The trial a script runs as (0.38's ``ClusterInfo.trial``)."""

    trial_id: int
    experiment_id: int
    hparams: dict[str, Any]
    trial_seed: int
    config: dict[str, Any]
    """The experiment config, with defaults filled in."""
    _steps_completed: int = 0
    """Determined's private counter; PEDL's trials resume from their checkpoint instead."""
    _trial_run_id: int = 0
    _debug: bool = False
    _inter_node_network_interface: str | None = None

    @property
    def _config(self) -> dict[str, Any]:
        """Determined's name of :attr:`config`."""
        return self.config


@dataclass(frozen=True)
class ClusterInfo:
    """Where a script runs (Determined 0.38's fields): ``task_type`` is always ``"TRIAL"``."""

    trial: TrialClusterInfo
    latest_checkpoint: str | None
    """The trial's latest checkpoint (its storage id), to resume from; None on a first run."""
    task_type: str = "TRIAL"
    user_data: dict[str, Any] = field(default_factory=dict)
    """The experiment config's ``data`` section."""
    master_url: str = ""
    """The master's URL ("" in local mode)."""
    cluster_id: str = "pedl"
    agent_id: str = ""
    """The machine the trial runs on (its host name)."""
    slot_ids: list[int] = field(default_factory=list)
    """The slots of this process: its GPUs (``CUDA_VISIBLE_DEVICES``), or ``[0]`` on a CPU
    slot (PEDL runs one process per slot, so a launcher that starts one worker per slot id
    starts one)."""
    task_id: str = ""
    """``"<experiment_id>.<trial_id>"``."""
    allocation_id: str = ""
    session_token: str = ""
    """Not given to scripts (PEDL's trial token stays in the trial process)."""
    master_cert_name: str | None = None
    master_cert_file: str | None = None
    container_addrs: list[str] = field(default_factory=list)
    """One address per container of the trial: this machine's name on one slot. On several
    slots each worker process is a container of one slot (Determined's containers hold a
    machine's slots; PEDL starts a process per slot): the first address is the chief's
    (``127.0.0.1`` when the trial runs on one machine), which its own launcher's workers
    connect to; on several machines the others are not known ("")."""
    container_rank: int = 0
    """This worker process's index among them (its rank on several slots)."""
    container_slot_counts: list[int] = field(default_factory=list)
    gpu_uuids: list[str] = field(default_factory=list)


def _slot_ids() -> list[int]:
    visible = os.environ.get("CUDA_VISIBLE_DEVICES", "")
    return [int(part) for part in visible.split(",") if part.strip().isdigit()] or [0]


def _containers(distributed: core.DistributedContext, host: str) -> list[str]:
    if distributed.size == 1:
        return [host]
    if distributed.cross_size == 1:
        return ["127.0.0.1"] * distributed.size
    return [distributed.chief_ip or ""] + [""] * (distributed.size - 1)


def get_cluster_info() -> ClusterInfo | None:
    """The trial this script runs as, or None when it runs outside PEDL."""
    context = core.active_context()
    if context is None:
        return None
    info = context.info
    distributed = context.distributed
    host = os.uname().nodename
    slots = _slot_ids()
    containers = _containers(distributed, host)
    return ClusterInfo(
        trial=TrialClusterInfo(
            trial_id=info.trial_id,
            experiment_id=info.experiment_id,
            hparams=dict(info.hparams),
            trial_seed=info.trial_seed,
            config=info.config.as_dict(),
        ),
        latest_checkpoint=info.latest_checkpoint,
        user_data=dict(info.config.data),
        master_url=str(info.extra.get("master_url") or os.environ.get("PEDL_MASTER", "")),
        agent_id=host,
        slot_ids=slots,
        task_id=f"{info.experiment_id}.{info.trial_id}",
        allocation_id=f"{info.experiment_id}.{info.trial_id}.1",
        container_addrs=containers,
        container_rank=distributed.get_rank(),
        container_slot_counts=[len(slots)] * len(containers),
    )
