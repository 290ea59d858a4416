"""Packages import only the layers below them: the config knows no searcher, the model
definition loader no framework (DESIGN: config < searcher; model_def < script/keras)."""

from __future__ import annotations

import subprocess
import sys

import pytest

# (package imported, packages that must then not be loaded)
LAYERS = [
    ("pedl.config", ["pedl.searcher", "pedl.script", "pedl.model_def"]),
    ("pedl.model_def", ["pedl.script", "pedl.keras", "pedl.tensorflow", "pedl.estimator"]),
]


@pytest.mark.parametrize(("package", "above"), LAYERS)
def test_a_package_does_not_import_the_layers_above_it(package: str, above: list[str]) -> None:
    check = (
        f"import sys, {package}\n"
        "loaded = {'.'.join(m.split('.')[:2]) for m in sys.modules if m.startswith('pedl.')}\n"
        "print(' '.join(sorted(loaded)))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", check], capture_output=True, text=True, check=True, timeout=60
    )
    loaded = set(result.stdout.split())
    assert package in loaded
    assert not loaded & set(above), f"{package} imports {sorted(loaded & set(above))}"
