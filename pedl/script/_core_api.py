"""Determined 0.38's Core API for a script that runs its own training loop (no ``model.fit``,
no framework at all): the core context its ``det.core.init()`` yields.

Determined 0.38 leaves the training length to the training code: the script reports metrics
with ``steps_completed``, checkpoints, and checks ``preempt.should_preempt()``; its searcher
reads the validation metrics (``time_metric``) and stops trials by preempting them. PEDL's
searcher hands a trial lengths to train to instead (:class:`pedl.core.SearcherOperation`).
:class:`CoreApiRun` joins the two, without the script's help:

- a validation report at ``steps_completed`` >= the length asked completes that length with
  the report's searcher metric, and the next length is asked for; when the searcher has no
  more (the trial is closed) ``should_preempt()`` turns True, so the script saves its state
  and returns, as it does when Determined's searcher stops it;
- reports past the length asked so far wait (training metrics) until the searcher decides;
  those past the last length of a closed trial are dropped (logged), as is a checkpoint
  taken there (its directory is given, and not kept);
- the trial's outcome when the script returns: preempted (pause, kill, shutdown) if that was
  asked, else completed (the searcher closed it, or the script ended its own training).

On several workers (``resources.slots_per_trial`` > 1, or the workers a script's own launcher
starts, which join the trial's context over :mod:`pedl.script._core_link`), as in 0.38 only
the chief reports metrics and checkpoints: the chief alone follows the searcher's lengths,
and ``should_preempt()`` is a collective (the chief's answer, broadcast; every worker calls it
in step).

The parts Determined 0.38 has and PEDL's core context does not are here too:
``train.report_progress``, ``train.set_status``, ``train.report_metrics(group, ...)``,
``train.get_tensorboard_path``, ``train.get_experiment_best_validation``,
``checkpoint.upload/download/get_metadata/delete``, ``store_path(metadata, shard=)``; 0.38's
run metadata (``train.set_metadata/get_metadata``) is refused with the alternatives.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import numbers
import os
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from pedl import core
from pedl.config import Length
from pedl.core._searcher import SearcherOperation
from pedl.script._core_link import CoreLink
from pedl.vocabulary import MetricKind, TrialOutcome

logger = logging.getLogger("pedl.script")


class CoreApiRun:
    """The state of one script run's Core API use; :attr:`context` is what the script's
    ``core.init()`` yields (see the module docstring)."""

    def __init__(self, context: core.Context) -> None:
        self._dist = context.distributed
        self._is_chief = self._dist.is_chief
        # The searcher and the preemption check as the chief alone uses them (the collective
        # ones would wait for workers that never ask: in 0.38 only the chief reports).
        self._inner = dataclasses.replace(
            context,
            searcher=core.SearcherContext(context.searcher.session, context.searcher.unit),
            preempt=core.PreemptContext(context.preempt.ask_platform),
        )
        self._operations: Iterator[SearcherOperation] | None = None
        self._op: SearcherOperation | None = None
        self._asked = 0
        """The largest length asked of the trial so far, in batches."""
        self.closed = False
        """The searcher has no more work for the trial."""
        self.used = False
        """The script reported, checkpointed or asked about preemption."""
        self._held: list[tuple[int, dict[str, float]]] = []
        self._dropped_logged = False
        self._own_operations = False
        self._preempted = False
        info = context.info
        self.context = dataclasses.replace(
            context,
            train=_Train(self),
            checkpoint=_Checkpoint(self, context.checkpoint),
            preempt=_Preempt(self),
            searcher=_Searcher(self, context.searcher),
        )
        self._metric = info.config.searcher.metric
        self._time_metric: str | None = getattr(info.config.searcher, "reported_time_metric", None)
        """An ASHA ``time_metric`` the script reports: the searcher's lengths are its values."""

    @contextlib.contextmanager
    def serving(self) -> Iterator[None]:
        """For the script's run: serve this context to the processes the script starts (the
        :mod:`pedl.script._core_link` variables in this process's environment, which they
        inherit), with this process's Python first on their ``PATH`` as ``python3``, as it is
        in Determined's containers."""
        link = CoreLink(self)
        saved = {name: os.environ.get(name) for name in (*link.env, "PATH")}
        os.environ.update(link.env)
        python_dir = os.path.dirname(sys.executable)
        os.environ["PATH"] = os.pathsep.join([python_dir, os.environ.get("PATH", "")])
        try:
            yield
        finally:
            for name, value in saved.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value
            link.close()

    # The searcher -----------------------------------------------------------------------

    def _to_batches(self, op: SearcherOperation) -> int:
        if op.unit == "batches":
            return op.length
        info = self._inner.info
        batch_size = info.hparams.get("global_batch_size")
        if isinstance(batch_size, int) and batch_size > 0:
            return info.config.length_to_batches(Length(unit=op.unit, value=op.length), batch_size)
        return op.length  # no batch size to convert with: the script's steps are the unit

    def _current(self) -> SearcherOperation | None:
        if self._operations is None and not self._own_operations:
            self._operations = self._inner.searcher.operations()
            self._advance()
        return self._op

    def _advance(self) -> None:
        assert self._operations is not None
        self._op = next(self._operations, None)
        if self._op is None:
            self.closed = True
        else:
            self._asked = max(self._asked, self._to_batches(self._op))

    def _progress(self, steps: int, metrics: Mapping[str, float]) -> float:
        """How far a validation at ``steps`` got, in the searcher's lengths: ``steps``, or the
        value of the reported time metric."""
        if self._time_metric is None:
            return steps
        if self._time_metric not in metrics:
            raise ValueError(
                f"the searcher's time_metric {self._time_metric!r} is not among the validation "
                f"metrics reported at {steps} steps ({', '.join(sorted(metrics))}); report it "
                "with every validation, or set searcher.time_metric to one of them"
            )
        return float(metrics[self._time_metric])

    def _validated(self, steps: int, metrics: Mapping[str, float]) -> None:
        """Complete every length the validation reached, with its searcher metric."""
        op = self._current()
        progress = self._progress(steps, metrics)
        while op is not None and progress >= self._to_batches(op):
            if self._metric not in metrics:
                raise ValueError(
                    f"the searcher metric {self._metric!r} is not among the validation metrics "
                    f"reported at {steps} steps ({', '.join(sorted(metrics))}); report it, or "
                    "set searcher.metric in the experiment config to one of them"
                )
            op.report_completed(float(metrics[self._metric]))
            self._advance()
            op = self._op
        if self.closed:
            logger.info(
                "the searcher has no more training for this trial now (at %d steps): "
                "should_preempt() is True from now on (if the searcher promotes it later, it "
                "starts again from its latest checkpoint)",
                steps,
            )

    def _past_asked(self, steps: int) -> bool:
        self._current()
        # With a reported time metric the lengths are not steps (the master bounds no rows
        # then): everything reported before the script stops is kept, as Determined keeps it.
        return self._time_metric is None and steps > self._asked

    # Reports ----------------------------------------------------------------------------

    def report(self, kind: MetricKind, steps: int, metrics: Mapping[str, float]) -> None:
        self.used = True
        if not self._is_chief:
            return  # only the chief reports (PEDL's train context drops the others')
        train = self._inner.train
        if kind is MetricKind.VALIDATION and not self._own_operations:
            self._validated(steps, metrics)
        if self._own_operations or not self._past_asked(steps):
            if kind is MetricKind.VALIDATION:
                train.report_validation_metrics(steps, metrics)
            else:
                train.report_training_metrics(steps, metrics)
            self._flush()
            return
        if self.closed:
            self._drop(f"{kind.value} metrics at {steps} steps")
        elif kind is MetricKind.TRAINING:
            self._held.append((steps, dict(metrics)))
        else:  # a validation short of the length asked cannot be past it
            raise AssertionError("unreachable")

    def _flush(self) -> None:
        held, self._held = self._held, []
        for steps, metrics in held:
            if steps <= self._asked:
                self._inner.train.report_training_metrics(steps, metrics)
            elif self.closed:
                self._drop(f"training metrics at {steps} steps")
            else:
                self._held.append((steps, metrics))

    def _drop(self, what: str) -> None:
        if not self._dropped_logged:
            logger.info(
                "%s not recorded: the searcher closed the trial at %d steps (later reports and "
                "checkpoints are not kept)",
                what,
                self._asked,
            )
            self._dropped_logged = True

    def outcome(self) -> TrialOutcome:
        """How the script's run ends: preempted if that was asked (and the script was told,
        or had not asked), else completed (by the searcher, or by the script ending its own
        training)."""
        if not self.closed and (self._preempted or self._inner.preempt.should_preempt()):
            return TrialOutcome.PREEMPTED
        self._held.clear()
        return TrialOutcome.COMPLETED if self.closed else TrialOutcome.STOPPED_EARLY

    def should_preempt(self) -> bool:
        """The script's ``should_preempt()``: on several workers a collective (every worker
        calls it in step; the chief's :meth:`decide_preempt` is broadcast)."""
        if self._dist.size == 1:
            return self.decide_preempt()
        if self._is_chief:
            return bool(self._dist.broadcast(self.decide_preempt()))
        self.used = True
        self._preempted = bool(self._dist.broadcast(None))
        return self._preempted

    def decide_preempt(self) -> bool:
        """The chief's answer: True once the searcher closed the trial, or once the platform
        asked it to stop."""
        self.used = True
        if self.closed:
            return True
        # Once told, the script stops: that answer decides the outcome (the master may be
        # asked again only after an activation already came).
        self._preempted = self._preempted or self._inner.preempt.should_preempt()
        return self._preempted

    # The searcher's operations for workers of the script's own launcher (0.38's deprecated
    # searcher.operations(), in step over their distributed context; the chief asks here).

    def linked_next_length(self) -> int | None:
        self.used = True
        self._own_operations = True
        return self._inner.searcher.session.next_length()

    def linked_complete(self, length: int, searcher_metric: float) -> None:
        self._inner.searcher.session.complete(length, searcher_metric)


_NO_RUN_METADATA = (
    "core_context.train.{name}: Determined 0.38's run metadata is not kept by PEDL; keep such "
    "values in a checkpoint's metadata (checkpoint.store_path(metadata) / get_metadata) or "
    "report them as metrics"
)


class _Train(core.TrainContext):
    """``core_context.train`` as Determined 0.38 has it."""

    def __init__(self, run: CoreApiRun) -> None:
        self._run = run
        self._status = ""
        self._progress = 0.0

    def report_training_metrics(
        self, steps_completed: int, metrics: Mapping[str, Any], batch_metrics: Any = None
    ) -> None:
        self._run.report(MetricKind.TRAINING, steps_completed, _numbers(metrics))

    def report_validation_metrics(self, steps_completed: int, metrics: Mapping[str, Any]) -> None:
        self._run.report(MetricKind.VALIDATION, steps_completed, _numbers(metrics))

    def report_metrics(self, group: str, steps_completed: int, metrics: Mapping[str, Any]) -> None:
        """0.38's generic form: groups ``training`` and ``validation`` are recorded; PEDL keeps
        no other groups (logged)."""
        if group == "training":
            self.report_training_metrics(steps_completed, metrics)
        elif group == "validation":
            self.report_validation_metrics(steps_completed, metrics)
        else:
            logger.info("metrics of group %r are not recorded by PEDL: %s", group, dict(metrics))

    def report_progress(self, progress: float) -> None:
        """The fraction of its training the script has done (0 to 1): logged."""
        if not 0 <= progress <= 1:
            raise ValueError(f"Progress should be between 0 and 1, not {progress}")
        self._progress = float(progress)
        logger.debug("progress %.0f%%", 100 * self._progress)

    def set_metadata(self, metadata: Mapping[str, Any]) -> dict[str, Any] | None:
        """0.38's run metadata: PEDL keeps none (refused, naming the alternatives)."""
        raise NotImplementedError(_NO_RUN_METADATA.format(name="set_metadata"))

    def get_metadata(self) -> dict[str, Any] | None:
        """0.38's run metadata: PEDL keeps none (refused, naming the alternatives)."""
        raise NotImplementedError(_NO_RUN_METADATA.format(name="get_metadata"))

    def report_early_exit(self, reason: Any) -> None:
        logger.info("the script reports an early exit: %s", reason)

    def set_status(self, status: str) -> None:
        self._status = status

    def get_tensorboard_path(self) -> Path:
        """The trial's TensorBoard directory (``pedl tensorboard`` serves it), where the
        script may write TensorBoard events."""
        info = self._run.context.info
        path = Path(
            info.extra.get("tensorboard_dir")
            or Path(tempfile.gettempdir()) / "pedl-tensorboard" / f"trial_{info.trial_id}"
        )
        path.mkdir(parents=True, exist_ok=True)
        return path

    def upload_tensorboard_files(self, *args: Any, **kwargs: Any) -> None:
        """PEDL serves the TensorBoard directory itself; nothing to upload."""

    def get_experiment_best_validation(self) -> float | None:
        """Not known to a PEDL trial: None (Determined gives None before any validation)."""
        return None


class _Checkpoint(core.CheckpointContext):
    """``core_context.checkpoint`` as Determined 0.38 has it."""

    def __init__(self, run: CoreApiRun, inner: core.CheckpointContext) -> None:
        self._run = run
        self._inner = inner

    @contextlib.contextmanager
    def store_path(
        self, metadata: Mapping[str, Any], shard: bool = False
    ) -> Iterator[tuple[Path, str]]:
        """As PEDL's (``metadata`` needs ``steps_completed``); ``shard`` is accepted (one
        process stores the checkpoint). Past the last length of a closed trial the directory
        is given and thrown away (logged)."""
        self._run.used = True
        steps = metadata.get("steps_completed")
        if isinstance(steps, int) and self._run.closed and self._run._past_asked(steps):
            self._run._drop(f"the checkpoint at {steps} steps")
            scratch = Path(tempfile.mkdtemp(prefix="pedl-dropped-checkpoint-"))
            try:
                yield scratch, ""
            finally:
                shutil.rmtree(scratch, ignore_errors=True)
            return
        with self._inner.store_path(metadata) as stored:
            yield stored

    @contextlib.contextmanager
    def restore_path(self, storage_id: str, **_options: Any) -> Iterator[Path]:
        """The checkpoint's directory, for the block (0.38's ``selector``/``download_mode``
        options are accepted)."""
        with self._inner.restore_path(storage_id) as path:
            yield path

    def get_metadata(self, storage_id: str) -> dict[str, Any]:
        return self._inner.get_metadata(storage_id)

    def upload(
        self,
        ckpt_dir: str | os.PathLike[str] | None,
        metadata: Mapping[str, Any] | None = None,
        *,
        shard: bool = False,
        selector: Callable[[str], bool] | None = None,
    ) -> str:
        """Copy ``ckpt_dir``'s files into a new checkpoint; return its storage id. As in 0.38,
        ``metadata`` needs ``steps_completed``, and ``selector`` gets each file's path relative
        to ``ckpt_dir`` (``"model/weights.bin"``)."""
        if ckpt_dir is None and not shard:
            raise RuntimeError(
                "cannot call checkpoint.upload(ckpt_dir=None, shard=False): there is nothing to "
                "upload (ckpt_dir=None is for the workers of a sharded upload)"
            )
        with self.store_path(metadata or {}, shard=shard) as (path, storage_id):
            if ckpt_dir is not None:
                _copy_files(Path(ckpt_dir), path, selector)
        return storage_id

    def download(
        self,
        storage_id: str,
        ckpt_dir: str | os.PathLike[str],
        download_mode: Any = None,
        *,
        selector: Callable[[str], bool] | None = None,
    ) -> None:
        """Copy checkpoint ``storage_id``'s files into ``ckpt_dir`` (created if need be);
        ``selector`` gets each file's path relative to the checkpoint, as in 0.38."""
        with self._inner.restore_path(storage_id) as path:
            _copy_files(path, Path(ckpt_dir), selector)

    def delete(self, storage_id: str, globs: Any = None) -> None:
        """PEDL deletes checkpoints by its retention policy (``checkpoint_storage``
        ``save_trial_latest``/``save_trial_best``): logged, nothing deleted."""
        logger.info("checkpoint.delete(%s) ignored: PEDL's retention policy decides", storage_id)


class _Preempt(core.PreemptContext):
    """``core_context.preempt``: True when PEDL asks the trial to stop (pause, kill,
    shutdown) or the searcher closed it."""

    def __init__(self, run: CoreApiRun) -> None:
        self._run = run

    def should_preempt(self, auto_ack: bool = True) -> bool:
        return self._run.should_preempt()

    def acknowledge_preemption_signal(self) -> None:
        """Accepted (PEDL needs no acknowledgement)."""


class _Searcher(core.SearcherContext):
    """``core_context.searcher``: 0.38's deprecated ``operations()`` gives PEDL's operations
    (the script then completes them itself)."""

    def __init__(self, run: CoreApiRun, inner: core.SearcherContext) -> None:
        self._run = run
        self._inner_searcher = inner
        self.unit = inner.unit

    def operations(self, *_args: Any, **_kwargs: Any) -> Iterator[SearcherOperation]:
        self._run._own_operations = True
        self._run.used = True
        return self._inner_searcher.operations()

    def acknowledge_out_of_ops(self) -> None:
        """Accepted (ignored, as in 0.38)."""

    def get_configured_units(self) -> Any:
        """The unit of ``searcher.max_length`` (``None`` for its integer form or none)."""
        max_length = getattr(self._run.context.info.config.searcher, "max_length", None)
        return None if max_length is None else max_length.unit.upper()


def _copy_files(source: Path, target: Path, selector: Callable[[str], bool] | None) -> None:
    """Copy the files under ``source`` to the same places under ``target``: those whose path
    relative to ``source`` (``/``-separated) ``selector`` accepts, or all."""
    target.mkdir(parents=True, exist_ok=True)
    for file in sorted(source.rglob("*")):
        relative = file.relative_to(source)
        if file.is_file() and (selector is None or selector(relative.as_posix())):
            (target / relative).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(file, target / relative)


def _numbers(metrics: Mapping[str, Any]) -> dict[str, float]:
    """Numeric metrics as floats (numpy's too); other values (strings, lists, which 0.38
    stores as JSON) are not recorded by PEDL (logged)."""
    out: dict[str, float] = {}
    for name, value in metrics.items():
        if isinstance(value, numbers.Real) and not isinstance(value, bool):
            out[str(name)] = float(value)
        else:
            logger.debug("metric %r is not a number; not recorded", name)
    return out
