"""Runs a simple model definition as a trial: the script (or function) runs with its
``model.fit`` call intercepted, so PEDL trains it like a TFKerasTrial."""

from __future__ import annotations

import contextlib
import importlib
from typing import TYPE_CHECKING, Any

from pedl import core
from pedl.vocabulary import TrialOutcome

if TYPE_CHECKING:
    from pedl.model_def import ModelDefinition


class ScriptController:
    """The controller of :class:`ScriptTrial` (see :class:`pedl.TrialController`)."""

    def __init__(self, definition: ModelDefinition, context: core.Context) -> None:
        self._definition = definition
        self._context = context
        self._run: Any = None

    @classmethod
    def from_definition(
        cls, definition: ModelDefinition, context: core.Context
    ) -> ScriptController:
        if definition.entrypoint_script is None and definition.entrypoint_function is None:
            raise ValueError("the model definition names no entrypoint script or function")
        return cls(definition, context)

    @property
    def progressed(self) -> bool:
        """True once a training batch completed in this run."""
        return bool(self._run is not None and self._run.progressed)

    @property
    def progress(self) -> Any:
        """The script's ``fit`` counters (see :attr:`pedl.script._fit.ScriptRun.progress`)."""
        return None if self._run is None else self._run.progress

    def run(self) -> TrialOutcome:
        """Run the script; its ``fit`` trains until the searcher closes the trial or a
        preemption (then the rest of the script does not run)."""
        # TensorFlow is imported only when a script trial runs, not when one is loaded (the
        # master and the CLI load model definitions and must stay light).
        fit: Any = importlib.import_module("pedl.script._fit")
        with self._strategy_scope():
            self._run = fit.ScriptRun(self._definition, self._context)
            outcome: TrialOutcome = self._run.execute()
        return outcome

    def _strategy_scope(self) -> contextlib.AbstractContextManager[Any]:
        """On several workers, the ``MultiWorkerMirroredStrategy``'s scope (made before the
        script runs any TensorFlow op): the script's model is built and compiled in it, as a
        TFKerasTrial's is, and ``from_tf_config()`` returns that strategy."""
        distributed = self._context.distributed
        if distributed.get_size() == 1:
            return contextlib.nullcontext()
        strategy: Any = importlib.import_module("pedl.keras._strategy")
        return strategy.multi_worker_strategy(distributed).scope()
