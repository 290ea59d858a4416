"""KerasTuner searches as PEDL experiments.

A script that builds a KerasTuner tuner (``RandomSearch``, ``GridSearch``, ``Hyperband``,
``BayesianOptimization`` over a ``build_model(hp)`` or ``HyperModel``) and calls
``tuner.search(...)`` runs unchanged as an experiment whose searcher is
``pedl.tuner:KerasTunerSearch`` (``searcher.name: custom``); a config that names no searcher
gets that one, with the tuner's objective, where its script imports KerasTuner
(:func:`implied_config`):

- the searcher process runs the script up to ``tuner.search`` and searches the tuner's space
  with the PEDL searcher its kind stands for (:class:`KerasTunerSearch`);
- each trial runs the script, whose ``tuner.search`` builds the model with the trial's
  hyperparameters and fits it as a script's ``fit`` (:func:`trial_search`);
- after the search, ``python -m pedl.tuner EXPERIMENT_ID search.py`` runs the script with its
  ``tuner.search`` reading the experiment's trials, so the code after it
  (``get_best_models``, ``get_best_hyperparameters``, ``results_summary``) sees the search's
  results (:func:`load_results`).

Outside PEDL the script is plain KerasTuner. Importing this package imports neither
TensorFlow nor KerasTuner; the names that need them import them when first used.
"""

from typing import Any

from pedl.tuner._implied import ImpliedSearchError, implied_config, wants_implied_searcher
from pedl.tuner._trial import SEARCH_METHOD, SearchEnded, is_tuner_search, trial_search

__all__ = [
    "SEARCH_METHOD",
    "ImpliedSearchError",
    "KerasTunerSearch",
    "SearchEnded",
    "SpaceError",
    "TunerSetupError",
    "implied_config",
    "is_tuner_search",
    "keras_tuner_values",
    "pedl_hyperparameters",
    "trial_search",
    "wants_implied_searcher",
]

_LAZY = {
    "KerasTunerSearch": "pedl.tuner._search",
    "SpaceError": "pedl.tuner._space",
    "keras_tuner_values": "pedl.tuner._space",
    "pedl_hyperparameters": "pedl.tuner._space",
    "TunerSetupError": "pedl.tuner._searcher",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'pedl.tuner' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)
