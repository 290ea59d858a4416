"""What every framework's trial context says of its trial: hyperparameters, the config, ids,
the seed, batch sizes, and a request to stop early. Framework-free: ``TFKerasTrialContext``
and ``EstimatorTrialContext`` (TensorFlow 2.15) extend it with their wrappers."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pedl import core

if TYPE_CHECKING:
    from pedl.config import Length


class TrialContext:
    """Runtime information of one trial, built by PEDL from the trial's core context.
    ``context.distributed`` is the trial's :class:`pedl.core.DistributedContext`."""

    def __init__(self, core_context: core.Context) -> None:
        self._core = core_context
        self._info = core_context.info
        self.distributed: core.DistributedContext = core_context.distributed
        self._stop_requested = False

    # Trial information -------------------------------------------------------------------

    def get_hparams(self) -> dict[str, Any]:
        """All of this trial's hyperparameter values (nested groups as dicts)."""
        return dict(self._info.hparams)

    def get_hparam(self, name: str) -> Any:
        """One hyperparameter's value; a KeyError lists the names that exist."""
        if name not in self._info.hparams:
            raise KeyError(
                f"no hyperparameter {name!r} in this trial; "
                f"defined: {', '.join(sorted(self._info.hparams)) or '(none)'}"
            )
        return self._info.hparams[name]

    def get_experiment_config(self) -> dict[str, Any]:
        """The experiment configuration, with defaults filled in, as a plain dict."""
        return self._info.config.as_dict()

    def get_data_config(self) -> dict[str, Any]:
        """The free-form ``data`` section of the experiment configuration."""
        return dict(self._info.config.data)

    def get_trial_id(self) -> int:
        return self._info.trial_id

    def get_experiment_id(self) -> int:
        return self._info.experiment_id

    def get_trial_seed(self) -> int:
        return self._info.trial_seed

    def get_global_batch_size(self) -> int:
        """The ``global_batch_size`` hyperparameter: the batch size summed over all slots."""
        if "global_batch_size" not in self._info.hparams:
            raise ValueError(
                "this trial needs a 'global_batch_size' hyperparameter (the batch size of one "
                "training step summed over all slots); add it under `hyperparameters`"
            )
        value = self._info.hparams["global_batch_size"]
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise ValueError(f"global_batch_size must be a positive integer, got {value!r}")
        return value

    def length_to_batches(self, length: Length) -> int:
        """A searcher length in batches: its value, or its records or epochs divided by the
        global batch size (epochs with ``records_per_epoch``)."""
        if length.unit == "batches":
            return length.value
        return length.to_batches(self.get_global_batch_size(), self._info.config.records_per_epoch)

    def get_per_slot_batch_size(self) -> int:
        """The batch size each slot trains with: global_batch_size / number of slots."""
        global_size = self.get_global_batch_size()
        slots = self.distributed.get_size()
        if global_size % slots:
            raise ValueError(
                f"global_batch_size ({global_size}) must be divisible by the number of slots "
                f"({slots})"
            )
        return global_size // slots

    # Stopping early ----------------------------------------------------------------------

    def set_stop_requested(self, stop_requested: bool) -> None:
        """Ask PEDL to stop training this trial at the next batch boundary (after the current
        batch): it validates and checkpoints, and the trial ends ``STOPPED_EARLY``; the
        searcher is told the trial stopped itself. ``False`` withdraws a request not yet
        acted upon."""
        if not isinstance(stop_requested, bool):
            raise TypeError(
                f"set_stop_requested expects a bool, got {type(stop_requested).__name__}"
            )
        self._stop_requested = stop_requested

    def get_stop_requested(self) -> bool:
        """Whether the trial asked to stop early (:meth:`set_stop_requested`)."""
        return self._stop_requested
