"""Write the master's OpenAPI document to ``ui/openapi.json``, byte for byte the same for the
same code: keys sorted, two-space indents, one newline at the end.

The app is built as the tests build it (:func:`pedl.master.api.create_app` over settings with
a scratch home and SQLite database; nothing is served, no migration runs) and its schema read
with ``app.openapi()``; the schema depends on the routes and the models only, not on the
settings. The web UI's types (``ui/src/api-types.ts``) are generated from the file by
``cd ui && npm run api-types``; ``make api-types`` runs both steps, and
``tests/ui/test_api_types.py`` fails while either file is out of date.

Usage: ``python scripts/openapi_dump.py [--check] [--output PATH]``. ``--check`` writes
nothing and exits 1, saying what to run, when the file differs from the code.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

from pedl.master import MasterSettings, create_app

ROOT = Path(__file__).resolve().parent.parent
OPENAPI_JSON = ROOT / "ui" / "openapi.json"
REGENERATE = (
    "make api-types (or: .venv/bin/python scripts/openapi_dump.py && cd ui && npm run api-types)"
)
"""The command that brings ``ui/openapi.json`` and ``ui/src/api-types.ts`` up to date."""


def openapi_document() -> dict[str, Any]:
    """The OpenAPI document of the master's REST API, as ``/openapi.json`` serves it."""
    with tempfile.TemporaryDirectory(prefix="pedl-openapi-") as scratch:
        home = Path(scratch)
        app = create_app(MasterSettings(home=home, db_url=f"sqlite:///{home}/db.sqlite"))
        try:
            return app.openapi()
        finally:
            app.state.database.dispose()


def render(document: dict[str, Any]) -> str:
    """``document`` as the stable text of ``ui/openapi.json``."""
    return json.dumps(document, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Write (or, with ``--check``, compare) the OpenAPI document; the exit status."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--output", type=Path, default=OPENAPI_JSON, help="default: %(default)s")
    parser.add_argument(
        "--check", action="store_true", help="write nothing; exit 1 if the file is out of date"
    )
    args = parser.parse_args(argv)
    text = render(openapi_document())
    output: Path = args.output
    if args.check:
        current = output.read_text(encoding="utf-8") if output.exists() else None
        if current != text:
            print(f"{output} is not the master's OpenAPI document: run {REGENERATE}")
            return 1
        return 0
    output.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
