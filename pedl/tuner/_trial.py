"""A KerasTuner script run as one trial of its search.

In a trial of an experiment whose searcher is :data:`SEARCH_METHOD`, the script's
``tuner.search(*args, **kwargs)`` builds the model with this trial's hyperparameters (the
tuner's ``hypermodel.build(hp)``, ``hp`` KerasTuner's ``HyperParameters`` holding them) and
fits it with the call's arguments through the hypermodel's ``fit`` (``model.fit`` unless the
``HyperModel`` overrides it): the script run's intercepted ``fit``, so PEDL trains it as any
script's (checkpoints, exact resume, several workers). A ``Hyperband`` trial fits up to
``max_epochs``, the searcher's rungs stopping it earlier. Then the script ends: the code after
``tuner.search`` reads the whole search's results, which one trial does not have (see
:mod:`pedl.tuner._results`).

Importing this module imports neither TensorFlow nor KerasTuner; :func:`trial_search` does
where the experiment is a KerasTuner search.
"""

from __future__ import annotations

import contextlib
import importlib
import logging
from collections.abc import Iterator, Mapping
from typing import Any

from pedl.config import CustomSearcherConfig, ExperimentConfig

logger = logging.getLogger("pedl.tuner")

SEARCH_METHOD = "pedl.tuner:KerasTunerSearch"
"""The ``searcher.search_method`` of a KerasTuner search (``searcher.name: custom``)."""


class SearchEnded(SystemExit):
    """Ends a trial's script after its ``tuner.search`` trained the trial's model (a
    ``SystemExit`` of status 0: the trial's script ended normally)."""

    def __init__(self) -> None:
        super().__init__(0)


def is_tuner_search(config: ExperimentConfig) -> bool:
    """Whether the experiment is a KerasTuner search (its searcher is :data:`SEARCH_METHOD`)."""
    searcher = config.searcher
    return isinstance(searcher, CustomSearcherConfig) and (
        (searcher.search_method or "").strip() == SEARCH_METHOD
    )


@contextlib.contextmanager
def trial_search(config: ExperimentConfig, hparams: Mapping[str, Any]) -> Iterator[None]:
    """While the block runs, a KerasTuner tuner's ``search`` trains this trial (see the module
    docstring) where ``config`` is a KerasTuner search's; elsewhere it changes nothing."""
    if not is_tuner_search(config):
        yield
        return
    capture: Any = importlib.import_module("pedl.tuner._capture")
    space: Any = importlib.import_module("pedl.tuner._space")
    searcher: Any = importlib.import_module("pedl.tuner._searcher")

    def search(tuner: Any, *args: Any, **kwargs: Any) -> None:
        if tuner.hypermodel is None:
            raise searcher.TunerSetupError(
                "the tuner has no hypermodel: PEDL builds each trial's model with "
                "hypermodel.build(hp); pass hypermodel= (a build_model(hp) function or a "
                "keras_tuner.HyperModel)"
            )
        hp = space.keras_tuner_values(tuner.oracle.get_space(), hparams)
        if searcher.kind_of(tuner) == "adaptive_asha":
            kwargs["epochs"] = tuner.oracle.max_epochs
        logger.info("KerasTuner trial with hyperparameters %s", hp.values)
        model = tuner.hypermodel.build(hp)
        tuner.hypermodel.fit(hp, model, *args, **kwargs)
        raise SearchEnded

    with capture.search_replaced(search):
        yield
