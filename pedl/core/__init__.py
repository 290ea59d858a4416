"""The seam between training code and the platform (see DESIGN.md, "The harness")."""

from pedl.core._backend import BACKEND_CALLS, TrialBackend
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
from pedl.core._memory import MemoryBackend
from pedl.core._preempt import PreemptContext, SignalPreemption
from pedl.core._searcher import SearcherContext, SearcherOperation, SearcherSession, Unit
from pedl.core._train import MetricsWriter, TrainContext
from pedl.core._zmq_transport import DistributedError
from pedl.vocabulary import MetricKind

__all__ = [
    "BACKEND_CALLS",
    "METADATA_FILE",
    "CheckpointContext",
    "CheckpointRegistry",
    "CheckpointStorageFullError",
    "Context",
    "DistributedContext",
    "DistributedError",
    "MemoryBackend",
    "MetricKind",
    "MetricsWriter",
    "PreemptContext",
    "SearcherContext",
    "SearcherOperation",
    "SearcherSession",
    "SignalPreemption",
    "TrainContext",
    "TrialBackend",
    "TrialInfo",
    "Unit",
    "active_context",
    "build_context",
    "detached_context",
    "init",
    "use_context",
]
