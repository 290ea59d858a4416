"""``pedl.get_hyperparameter(name)``: a hyperparameter of the trial a script runs in."""

from __future__ import annotations

from typing import Any

from pedl import core


def get_hyperparameter(name: str) -> Any:
    """The value of hyperparameter ``name`` in the trial this script runs as.

    For simple model definitions (an entrypoint script or function that calls
    ``model.fit``). Nested hyperparameter groups are dicts. Raises ``RuntimeError`` outside a
    PEDL trial and ``KeyError`` (listing the names that exist) for an unknown name.
    """
    context = core.active_context()
    if context is None:
        raise RuntimeError(
            f"pedl.get_hyperparameter({name!r}) is only available in a script that PEDL runs "
            "as a trial (entrypoint: train.py); outside PEDL, set the value yourself"
        )
    hparams = context.info.hparams
    if name not in hparams:
        raise KeyError(
            f"no hyperparameter {name!r} in this trial; defined: "
            f"{', '.join(sorted(hparams)) or '(none)'}"
        )
    return hparams[name]
