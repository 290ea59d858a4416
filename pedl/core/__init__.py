"""The seam between training code and the platform (see DESIGN.md, "The harness")."""

from pedl.core._checkpoint import (
    METADATA_FILE,
    CheckpointContext,
    CheckpointRegistry,
    CheckpointStorageFullError,
)
from pedl.core._context import Context, TrialInfo, build_context
from pedl.core._detached import detached_context
from pedl.core._distributed import DistributedContext
from pedl.core._init import active_context, init, use_context
from pedl.core._link import KEY_ENV as LINK_KEY_ENV
from pedl.core._link import LINK_ENV, linked_context
from pedl.core._link_transport import LinkClient, LinkError, LinkServer
from pedl.core._master_client import MasterClient, MasterError
from pedl.core._memory import FixedLengths, MemoryRecorder
from pedl.core._preempt import PreemptContext, SignalPreemption
from pedl.core._report_sender import ReportSender
from pedl.core._rest import (
    RestCheckpointRegistry,
    RestMetricsWriter,
    RestPreemption,
    RestSearcherSession,
)
from pedl.core._searcher import SearcherContext, SearcherOperation, SearcherSession, Unit
from pedl.core._train import MetricsWriter, TrainContext
from pedl.core._zmq_transport import DistributedError
from pedl.engine import MetricKind

__all__ = [
    "LINK_ENV",
    "LINK_KEY_ENV",
    "METADATA_FILE",
    "CheckpointContext",
    "CheckpointRegistry",
    "CheckpointStorageFullError",
    "Context",
    "DistributedContext",
    "DistributedError",
    "FixedLengths",
    "LinkClient",
    "LinkError",
    "LinkServer",
    "MasterClient",
    "MasterError",
    "MemoryRecorder",
    "MetricKind",
    "MetricsWriter",
    "PreemptContext",
    "ReportSender",
    "RestCheckpointRegistry",
    "RestMetricsWriter",
    "RestPreemption",
    "RestSearcherSession",
    "SearcherContext",
    "SearcherOperation",
    "SearcherSession",
    "SignalPreemption",
    "TrainContext",
    "TrialInfo",
    "Unit",
    "active_context",
    "build_context",
    "detached_context",
    "init",
    "linked_context",
    "use_context",
]
