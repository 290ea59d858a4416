"""Waiting, in the browser tests, until a page has drawn its charts, and reading a chart
canvas' pixels.

The web UI's Content-Security-Policy has no ``unsafe-eval``: Playwright's ``wait_for_function``
given an expression (``"performance.getEntriesByName(...).length > 0"``) evaluates that string
in the page at every poll, which the page refuses (an ``EvalError``, and a JavaScript error on
the page). Given a function (an arrow's source), it calls the function instead, which the
policy allows: these waits are written so.
"""

from __future__ import annotations

from playwright.sync_api import Locator, Page, expect

CHARTS_PAINTED = "() => performance.getEntriesByName('pedl:charts-painted').length > 0"
"""True once the page marked its first charts with data painted (ui/src/perf.ts)."""


def wait_for_charts(page: Page) -> None:
    """Wait until the page (an experiment's overview or visualization tab) has painted its
    charts."""
    page.wait_for_function(CHARTS_PAINTED)


CANVAS_PIXELS = """(canvas) => {
    // A copy of what the canvas shows, then its pixels: the visualization tab's canvases are
    // drawn by a worker (transferControlToOffscreen), and such a canvas has no context the
    // page could read; drawn onto another canvas it gives the last frame the worker sent.
    const copy = document.createElement('canvas');
    copy.width = canvas.width;
    copy.height = canvas.height;
    const ctx = copy.getContext('2d');
    ctx.drawImage(canvas, 0, 0);
    return Array.from(ctx.getImageData(0, 0, copy.width, copy.height).data);
}"""

SHOWS_A_FRAME = f"""(canvas) => ({CANVAS_PIXELS})(canvas).some((v, i) => i % 4 === 3 && v > 0)"""
"""True once the canvas shows something (the worker's frame reaches the page a moment after
the worker says it drew)."""


def painted_pixels(canvas: Locator) -> list[int]:
    """The RGBA bytes of a chart canvas once it has drawn a scene (``data-painted``, set by
    ui/src/components/chart-surface.ts whether the worker or the page drew it) and shows it."""
    expect(canvas).not_to_have_attribute("data-painted", "0")
    canvas.page.wait_for_function(SHOWS_A_FRAME, arg=canvas.element_handle())
    pixels: list[int] = canvas.evaluate(CANVAS_PIXELS)
    return pixels
