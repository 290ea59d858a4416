"""MkDocs hook: the web UI's pictures from the latest browser tests, where they ran here.

The pages show the screenshots kept in ``docs/img/ui/`` (committed, so that the site builds
anywhere). ``tests/ui/test_screenshots.py`` takes the same pictures of the current UI, light
and dark, into ``build/screenshots/`` (a build artefact, not committed): where the browser
tests ran, the built site shows those instead (the light set), so it pictures the UI as it is.
Where they did not (a fresh clone: ``make test`` builds the docs before it runs them), the
committed copies stay; nothing fails.
"""

from __future__ import annotations

import logging
import shutil
from pathlib import Path
from typing import Any

log = logging.getLogger("mkdocs.hooks.screenshots")

ROOT = Path(__file__).resolve().parents[2]
TAKEN = ROOT / "build" / "screenshots" / "light"
"""Where test_screenshots.py puts the light set."""
PICTURES = "img/ui"
"""Where the pages' screenshots are, under the docs (and under the built site)."""


def on_post_build(config: Any, **_: Any) -> None:
    """Replace each of the site's UI screenshots by the browser tests' picture of that name,
    when there is one."""
    site = Path(config["site_dir"]) / PICTURES
    if not TAKEN.is_dir() or not site.is_dir():
        return
    taken = [picture for picture in sorted(site.glob("*.png")) if (TAKEN / picture.name).is_file()]
    for picture in taken:
        shutil.copyfile(TAKEN / picture.name, picture)
    if taken:
        log.info("the web UI's screenshots from %s: %s", TAKEN, ", ".join(p.name for p in taken))
