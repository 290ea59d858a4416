"""Waiting, in the browser tests, until a page has drawn its charts.

The web UI's Content-Security-Policy has no ``unsafe-eval``: Playwright's ``wait_for_function``
given an expression (``"performance.getEntriesByName(...).length > 0"``) evaluates that string
in the page at every poll, which the page refuses (an ``EvalError``, and a JavaScript error on
the page). Given a function (an arrow's source), it calls the function instead, which the
policy allows: these waits are written so.
"""

from __future__ import annotations

from playwright.sync_api import Page

CHARTS_PAINTED = "() => performance.getEntriesByName('pedl:charts-painted').length > 0"
"""True once the page marked its first charts with data painted (ui/src/perf.ts)."""


def wait_for_charts(page: Page) -> None:
    """Wait until the page (an experiment's overview or visualization tab) has painted its
    charts."""
    page.wait_for_function(CHARTS_PAINTED)
