"""A trial's metrics as TensorBoard scalars: an event file the master appends to.

Written with TensorBoard's own record framing and protocol buffers (the ``tensorboard``
package, no TensorFlow). Tags follow Determined's layout under PEDL's name: a training metric
``loss`` is ``PEDL/loss``, a validation metric ``loss`` is ``PEDL/val_loss`` (a validation
metric already named ``val...`` keeps its name), the step is the trial's batch count.
Values that are not finite numbers (strings, lists, booleans) are left out; ``NaN`` and the
infinities (stored as ``"NaN"``, ``"Infinity"``, ``"-Infinity"``) are written as such.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from pedl.vocabulary import MetricKind, decode_metric_value

TAG_PREFIX = "PEDL/"


def scalar_tag(kind: MetricKind, name: str) -> str:
    """The TensorBoard tag of metric ``name`` of series ``kind``."""
    if kind is MetricKind.VALIDATION and not name.startswith("val"):
        name = f"val_{name}"
    return TAG_PREFIX + name


def scalar_value(value: Any) -> float | None:
    """``value`` as a scalar TensorBoard can plot, or ``None`` when it is none."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        decoded = decode_metric_value(value)
        return decoded if isinstance(decoded, float) else None
    return None


def scalars(kind: MetricKind, metrics: Mapping[str, Any]) -> list[tuple[str, float]]:
    """The ``(tag, value)`` pairs of one reported row, in the row's order."""
    pairs = []
    for name, raw in metrics.items():
        value = scalar_value(raw)
        if value is not None:
            pairs.append((scalar_tag(kind, name), value))
    return pairs


class ScalarEventFile:
    """One event file, created on the first write (its header event first), appended to
    after. Not thread-safe: one writer (the manager's sync thread) per file."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.path = directory / (
            f"events.out.tfevents.{int(time.time())}.{socket.gethostname()}.pedl-metrics"
        )

    def append(self, rows: Iterable[tuple[int, float, list[tuple[str, float]]]]) -> int:
        """Append ``(step, wall time, [(tag, value), ...])`` rows; returns the events written."""
        from tensorboard.compat.proto import event_pb2, summary_pb2, tensor_pb2, types_pb2
        from tensorboard.summary.writer.record_writer import RecordWriter

        # Scalars as the scalars plugin writes them, in double precision (a legacy
        # ``simple_value`` is a float32: 0.9 would read back as 0.8999999761581421).
        metadata = summary_pb2.SummaryMetadata(
            plugin_data=summary_pb2.SummaryMetadata.PluginData(plugin_name="scalars")
        )
        records = []
        if not self.path.exists():
            header = event_pb2.Event(wall_time=time.time(), file_version="brain.Event:2")
            records.append(header.SerializeToString())
        for step, wall_time, pairs in rows:
            if not pairs:
                continue
            values = [
                summary_pb2.Summary.Value(
                    tag=tag,
                    metadata=metadata,
                    tensor=tensor_pb2.TensorProto(dtype=types_pb2.DT_DOUBLE, double_val=[value]),
                )
                for tag, value in pairs
            ]
            event = event_pb2.Event(
                wall_time=wall_time, step=step, summary=summary_pb2.Summary(value=values)
            )
            records.append(event.SerializeToString())
        if not records:
            return 0
        self.directory.mkdir(parents=True, exist_ok=True)
        with self.path.open("ab") as out:
            writer = RecordWriter(out)
            for record in records:
                writer.write(record)
            writer.flush()
        return len(records)
