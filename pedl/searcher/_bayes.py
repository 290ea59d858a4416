"""Building the Optuna searchers (``tpe``, ``gp``, ``nsga2``) from a config, and saying what
they need.

Optuna is an optional dependency (``pip install 'pedl[bayes]'``), and a heavy import: this
module does not import it; the builders import :mod:`pedl.searcher._optuna` when called.
"""

from __future__ import annotations

import importlib.util

from pedl.config import (
    ExperimentConfig,
    GPSearcherConfig,
    NSGA2SearcherConfig,
    TPESearcherConfig,
)
from pedl.searcher._errors import SearcherError
from pedl.searcher._search_method import SearchMethod

_REQUIREMENTS: dict[str, tuple[str, ...]] = {
    "tpe": ("optuna",),
    "nsga2": ("optuna",),
    "gp": ("optuna", "torch", "scipy"),
}


def missing_optuna_requirements(searcher_name: str) -> str | None:
    """Why the ``tpe``, ``nsga2`` or ``gp`` searcher cannot run in this environment, or
    ``None``.

    ``tpe`` and ``nsga2`` need Optuna (the ``bayes`` extra). ``gp`` also needs PyTorch and
    SciPy, which Optuna's ``GPSampler`` computes with and which PEDL does not install.
    Imports nothing.
    """
    needed = _REQUIREMENTS.get(searcher_name)
    if needed is None:
        return f"{searcher_name!r} is not a Bayesian searcher; use tpe, nsga2 or gp."
    missing = [m for m in needed if importlib.util.find_spec(m) is None]
    if not missing:
        return None
    if "optuna" in missing:
        return (
            f"The {searcher_name} searcher needs Optuna, an optional dependency of PEDL that is "
            "not installed: pip install 'pedl[bayes]'."
        )
    names = " and ".join({"torch": "PyTorch", "scipy": "SciPy"}[m] for m in missing)
    return (
        f"The gp searcher needs {names}, which Optuna's Gaussian-process sampler computes with "
        "and PEDL does not install: pip install torch scipy (the CPU build of torch is "
        "enough), or use the tpe searcher."
    )


def tpe_from_config(config: ExperimentConfig) -> SearchMethod:
    """The ``tpe`` searcher of ``config``: an ``OptunaSearch`` with Optuna's TPE sampler,
    seeded with the experiment seed. :class:`SearcherError` when Optuna is not installed."""
    return _from_config(config, "tpe")


def nsga2_from_config(config: ExperimentConfig) -> SearchMethod:
    """The ``nsga2`` searcher of ``config``: an ``OptunaSearch`` with Optuna's NSGA-II
    sampler, seeded with the experiment seed. :class:`SearcherError` when Optuna is not
    installed."""
    return _from_config(config, "nsga2")


def gp_from_config(config: ExperimentConfig) -> SearchMethod:
    """The ``gp`` searcher of ``config``: an ``OptunaSearch`` with Optuna's Gaussian-process
    sampler, seeded with the experiment seed. :class:`SearcherError` when Optuna, PyTorch or
    SciPy is not installed (:func:`missing_optuna_requirements` says which)."""
    return _from_config(config, "gp")


def _from_config(config: ExperimentConfig, name: str) -> SearchMethod:
    searcher = config.searcher
    configs = TPESearcherConfig | GPSearcherConfig | NSGA2SearcherConfig
    if not isinstance(searcher, configs) or searcher.name != name:
        raise SearcherError(f"Not a {name} searcher config: {searcher.name!r}.")
    problem = missing_optuna_requirements(name)
    if problem is not None:
        raise SearcherError(problem)
    # Imported here, not at the top: Optuna is optional and slow to import, and pedl.searcher
    # (imported by config validation and the CLI) must not pay for it.
    from pedl.searcher._optuna import OptunaSearch

    return OptunaSearch(
        space=config.hyperparameters,
        sampler=name,
        seed=config.reproducibility.experiment_seed,
        max_trials=searcher.max_trials,
        max_length=searcher.max_length.value,
        max_concurrent_trials=searcher.max_concurrent_trials,
        n_startup_trials=searcher.n_startup_trials,
        smaller_is_better=searcher.smaller_is_better,
        directions=[o.smaller_is_better for o in searcher.objectives],
        population_size=getattr(searcher, "population_size", 50),
    )
