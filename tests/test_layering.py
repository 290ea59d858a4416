"""Packages import only the layers below them: the vocabulary nothing of PEDL's, the core
context (the harness's seam) no searcher, engine or framework, the config no searcher, the
model definition loader no framework (DESIGN); and no two packages import each other, at
module level or inside a function."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from tests.waits import scaled

PEDL = Path(__file__).parents[1] / "pedl"

HARNESS_MUST_NOT_LOAD = [
    "pedl.searcher",
    "pedl.engine",
    "pedl.script",
    "pedl.keras",
    "pedl.tensorflow",
    "pedl.estimator",
    "pedl.master",
    "pedl.local",
    "pedl.client",
    "pedl.cli",
]

# (package imported, packages that must then not be loaded)
LAYERS = [
    ("pedl.vocabulary", ["pedl.config", "pedl.core", "pedl.engine", "pedl.storage"]),
    ("pedl.core", HARNESS_MUST_NOT_LOAD),
    ("pedl.config", ["pedl.searcher", "pedl.script", "pedl.model_def"]),
    ("pedl.model_def", ["pedl.script", "pedl.keras", "pedl.tensorflow", "pedl.estimator"]),
    # KerasTuner searches: pedl.script asks it whether a trial is one (no framework loaded).
    ("pedl.tuner", ["pedl.script", "pedl.keras", "pedl.master", "pedl.local", "pedl.cli"]),
]


def loaded_after_import(module: str, prefix: str) -> set[str]:
    """The modules starting with ``prefix`` that a fresh interpreter has loaded after
    ``import module``."""
    check = (
        f"import sys, {module}\n"
        f"print(' '.join(sorted(m for m in sys.modules if m.startswith({prefix!r}))))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", check],
        capture_output=True,
        text=True,
        check=True,
        timeout=scaled(60),
    )
    return set(result.stdout.split())


@pytest.mark.parametrize(("package", "above"), LAYERS)
def test_a_package_does_not_import_the_layers_above_it(package: str, above: list[str]) -> None:
    loaded = {_package(m) for m in loaded_after_import(package, "pedl.")}
    assert package in loaded
    assert not loaded & set(above), f"{package} imports {sorted(loaded & set(above))}"


def test_the_core_context_loads_no_framework() -> None:
    heavy = ("tensorflow", "keras", "tf_keras", "optuna", "ray", "fastapi", "sqlalchemy")
    loaded = {m.split(".")[0] for m in loaded_after_import("pedl.core", "")}
    assert not loaded & set(heavy), sorted(loaded & set(heavy))


def test_the_tuner_package_loads_no_framework() -> None:
    """pedl.script imports pedl.tuner in every script trial: KerasTuner and TensorFlow are
    imported only where the experiment is a KerasTuner search."""
    heavy = ("tensorflow", "keras", "keras_tuner")
    loaded = {m.split(".")[0] for m in loaded_after_import("pedl.tuner", "")}
    assert not loaded & set(heavy), sorted(loaded & set(heavy))


def _package(module: str) -> str:
    return ".".join(module.split(".")[:2])


def package_imports() -> dict[tuple[str, str], list[str]]:
    """Every import of one ``pedl`` package by another, wherever it is written (module level,
    inside a function, under ``TYPE_CHECKING``), with where: (importer, imported) -> places."""
    edges: dict[tuple[str, str], list[str]] = {}
    for path in sorted(PEDL.rglob("*.py")):
        module = ".".join(path.relative_to(PEDL.parent).with_suffix("").parts)
        source = _package(module.removesuffix(".__init__"))
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module]
            elif isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            else:
                continue
            for name in names:
                target = _package(name)
                if name.startswith("pedl.") and target != source and "pedl" not in (source, target):
                    place = f"{path.relative_to(PEDL.parent)}:{node.lineno}"
                    edges.setdefault((source, target), []).append(place)
    return edges


def test_no_import_cycle_across_packages() -> None:
    edges = package_imports()
    graph: dict[str, set[str]] = {}
    for source, target in edges:
        graph.setdefault(source, set()).add(target)

    def reaches(start: str, goal: str) -> list[str] | None:
        paths = [[start]]
        seen = {start}
        while paths:
            path = paths.pop()
            for nxt in sorted(graph.get(path[-1], ())):
                if nxt == goal:
                    return [*path, nxt]
                if nxt not in seen:
                    seen.add(nxt)
                    paths.append([*path, nxt])
        return None

    cycles = []
    for source, target in sorted(edges):
        back = reaches(target, source)
        if back is not None:
            cycles.append(f"{source} -> {' -> '.join(back)} ({edges[(source, target)][0]})")
    assert not cycles, "\n".join(cycles)


def test_the_core_context_imports_no_searcher_engine_or_framework_anywhere() -> None:
    edges = package_imports()
    found = {
        target: places
        for (source, target), places in edges.items()
        if source == "pedl.core" and target in HARNESS_MUST_NOT_LOAD
    }
    assert not found, found


def test_local_mode_imports_nothing_of_the_master() -> None:
    """Local mode runs without a master: what it shares with the master (the database layer,
    the gang launcher, output filtering) lives below both."""
    edges = package_imports()
    assert not edges.get(("pedl.local", "pedl.master")), edges.get(("pedl.local", "pedl.master"))
    assert loaded_after_import("pedl.local", "pedl.master") == set()
