"""What an experiment config's ``entrypoint`` runs, as far as the config alone tells: a script
(which decides its own training length and batch size) or a Trial class, and which of
Determined's launchers it names (those of PyTorch and DeepSpeed are out of PEDL's scope).

The model definition loader (:mod:`pedl.model_def`) is the authority when a trial starts;
these checks only let a config be refused at create, naming the field, instead of failing in
its first trial.
"""

from __future__ import annotations

import re
import shlex

from pedl.config._issues import Problem

_PYTHON_RE = re.compile(r"^python(\d+(\.\d+)?)?$")

OUT_OF_SCOPE_LAUNCHERS: dict[str, str] = {
    "determined.launch.torch_distributed": "PyTorch (torch.distributed)",
    "determined.launch.deepspeed": "DeepSpeed",
}
"""Determined's launchers of frameworks PEDL does not train, and the framework each starts.
(``determined.launch.tensorflow`` is PEDL's own way; ``determined.launch.horovod --trial
module:Class`` stays loadable: PEDL starts the processes of a Trial class itself.)"""


def _tokens(entrypoint: str) -> list[str]:
    try:
        return shlex.split(entrypoint)
    except ValueError:
        return entrypoint.split()


def launched_command(entrypoint: str) -> str:
    """The command a Determined launcher in ``entrypoint`` starts (``python3 -m
    determined.launch.tensorflow -- python3 train.py`` -> ``python3 train.py``); the
    entrypoint itself when it names no launcher."""
    tokens = _tokens(entrypoint)
    if not (
        len(tokens) >= 3
        and _PYTHON_RE.match(tokens[0])
        and tokens[1] == "-m"
        and tokens[2].startswith(("determined.launch.", "pedl.launch."))
    ):
        return entrypoint
    rest = tokens[3:]
    if "--trial" in rest and rest.index("--trial") + 1 < len(rest):
        return rest[rest.index("--trial") + 1]
    if "--" in rest:
        rest = rest[rest.index("--") + 1 :]
    while rest and rest[0].startswith("-"):
        rest = rest[1:]
    return shlex.join(rest)


def is_script_entrypoint(entrypoint: str | None) -> bool:
    """Whether ``entrypoint`` runs a script (``train.py``, ``python3 train.py --flag``, through a
    launcher or not) rather than naming a Trial class or function (``module:Name``, or none)."""
    if entrypoint is None:
        return False
    tokens = _tokens(launched_command(entrypoint))
    if not tokens:
        return False
    return tokens[0].endswith(".py") or bool(_PYTHON_RE.match(tokens[0]))


def launcher_problems(entrypoint: object) -> list[Problem]:
    """A Determined launcher of a framework PEDL does not train, refused in one line."""
    if isinstance(entrypoint, list) and all(isinstance(part, str) for part in entrypoint):
        tokens = list(entrypoint)  # Determined's argv form
    elif isinstance(entrypoint, str):
        tokens = _tokens(entrypoint)
    else:
        return []
    for i, token in enumerate(tokens[:-1]):
        if token == "-m" and tokens[i + 1] in OUT_OF_SCOPE_LAUNCHERS:
            module = tokens[i + 1]
            framework = OUT_OF_SCOPE_LAUNCHERS[module]
            return [
                (
                    ("entrypoint",),
                    f"{module} launches {framework}, which PEDL does not train (PEDL trains "
                    "TensorFlow and Keras models); use determined.launch.tensorflow with a "
                    "Keras script, or a Trial class",
                )
            ]
    return []
