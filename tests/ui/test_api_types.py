"""The web UI's API types are the master's: ``ui/openapi.json`` is the OpenAPI document the code
gives (``scripts/openapi_dump.py``), ``ui/src/api-types.ts`` is what ``npm run api-types``
(openapi-typescript, pinned in ``ui/package.json``) generates from it, and the UI decodes
non-finite metric values by the names :mod:`pedl.vocabulary` encodes, nowhere but ``api.ts``.

Each check fails naming the command that brings the files up to date (``make api-types``)."""

from __future__ import annotations

import difflib
import importlib.util
import json
import math
import re
import shutil
import subprocess
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from pedl.vocabulary import NON_FINITE_NAMES, encode_metric_value
from tests.waits import scaled

ROOT = Path(__file__).parents[2]
UI = ROOT / "ui"
API_TYPES = UI / "src" / "api-types.ts"


def _dump_script() -> ModuleType:
    path = ROOT / "scripts" / "openapi_dump.py"
    spec = importlib.util.spec_from_file_location("openapi_dump", path)
    assert spec is not None and spec.loader is not None, path
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


DUMP = _dump_script()


def _differs(name: str, expected: str, actual: str) -> str:
    """What to run, and the first lines of the difference."""
    diff = difflib.unified_diff(
        actual.splitlines(),
        expected.splitlines(),
        f"{name} (checked in)",
        f"{name} (now)",
        lineterm="",
    )
    head = "\n".join(list(diff)[:40])
    return f"{name} is out of date: run {DUMP.REGENERATE}\n{head}"


@pytest.fixture(scope="module")
def openapi_text() -> str:
    return str(DUMP.render(DUMP.openapi_document()))


def test_openapi_json_is_the_masters(openapi_text: str) -> None:
    checked_in = DUMP.OPENAPI_JSON.read_text(encoding="utf-8")
    if checked_in != openapi_text:
        pytest.fail(_differs("ui/openapi.json", openapi_text, checked_in))


def test_the_dump_is_stable(openapi_text: str) -> None:
    assert DUMP.render(DUMP.openapi_document()) == openapi_text


def test_api_types_are_generated_from_openapi_json(tmp_path: Path) -> None:
    """``npm run api-types`` in a copy of ``ui/`` (its package.json, openapi.json and
    node_modules) writes the checked-in ``src/api-types.ts``."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.skip("node and npm are not installed: the generated TypeScript cannot be checked")
    generator = UI / "node_modules" / "openapi-typescript"
    assert generator.is_dir(), (
        f"{generator} is missing: run `cd ui && npm ci` (make ui does) to install the pinned "
        "openapi-typescript"
    )
    for name in ("package.json", "openapi.json"):
        shutil.copy(UI / name, tmp_path / name)
    (tmp_path / "node_modules").symlink_to(UI / "node_modules", target_is_directory=True)
    (tmp_path / "src").mkdir()
    run = subprocess.run(
        ["npm", "run", "--silent", "api-types"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=scaled(120),
        check=False,
    )
    assert run.returncode == 0, f"npm run api-types failed:\n{run.stdout}\n{run.stderr}"
    generated = (tmp_path / "src" / "api-types.ts").read_text(encoding="utf-8")
    checked_in = API_TYPES.read_text(encoding="utf-8")
    if checked_in != generated:
        pytest.fail(_differs("ui/src/api-types.ts", generated, checked_in))


def _metric_value_names(schema: dict[str, Any]) -> list[str]:
    """The strings a metric-value schema allows."""
    return [name for option in schema["anyOf"] for name in option.get("enum", [])]


def test_the_schema_names_the_non_finite_values_as_the_vocabulary_encodes_them() -> None:
    schemas = json.loads(DUMP.OPENAPI_JSON.read_text(encoding="utf-8"))["components"]["schemas"]
    encoded = [encode_metric_value(value) for value in (math.nan, math.inf, -math.inf)]
    assert encoded == list(NON_FINITE_NAMES)
    carriers = {
        "MetricPublic.metrics": schemas["MetricPublic"]["properties"]["metrics"],
        "TrialListItem.latest_validation": schemas["TrialListItem"]["properties"][
            "latest_validation"
        ]["anyOf"][0],
        "CheckpointPublic.validation_metrics": schemas["CheckpointPublic"]["properties"][
            "validation_metrics"
        ]["anyOf"][0],
    }
    for name, schema in carriers.items():
        assert _metric_value_names(schema["additionalProperties"]) == encoded, name


def test_the_ui_decodes_non_finite_values_in_api_ts_only() -> None:
    """``metricNumber`` (``ui/src/api.ts``) decodes by a table keyed by the generated schema's
    names (the build fails when they differ; ``ui/test/metric-values.test.ts`` checks the
    values); no other source of the UI compares a value to one of the names."""
    api = (UI / "src" / "api.ts").read_text(encoding="utf-8")
    assert 'export type MetricValue = Schemas["MetricPublic"]["metrics"][string];' in api
    assert "NON_FINITE: Readonly<Record<NonFiniteName, number>>" in api
    names = "|".join(re.escape(name) for name in NON_FINITE_NAMES)
    compared = re.compile(
        rf"""(?:===?|!==?|case)\s*["'`](?:{names})["'`]|["'`](?:{names})["'`]\s*(?:===?|!==?)"""
    )
    elsewhere = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
        for path in sorted((UI / "src").rglob("*.ts"))
        if path.name not in {"api.ts", "api-types.ts"}
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if compared.search(line)
    ]
    assert not elsewhere, f"non-finite metric values decoded outside ui/src/api.ts: {elsewhere}"
