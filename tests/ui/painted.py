"""Waiting, in the browser tests, until a page has drawn its charts, and reading a chart
canvas' pixels.

The web UI's Content-Security-Policy has no ``unsafe-eval``: Playwright's ``wait_for_function``
given an expression (``"performance.getEntriesByName(...).length > 0"``) evaluates that string
in the page at every poll, which the page refuses (an ``EvalError``, and a JavaScript error on
the page). Given a function (an arrow's source), it calls the function instead, which the
policy allows: these waits are written so.
"""

from __future__ import annotations

import base64

from playwright.sync_api import Locator, Page, expect

CHARTS_PAINTED = "() => performance.getEntriesByName('pedl:charts-painted').length > 0"
"""True once the page marked its first charts with data painted (ui/src/perf.ts)."""


def wait_for_charts(page: Page) -> None:
    """Wait until the page (an experiment's overview or visualization tab) has painted its
    charts."""
    page.wait_for_function(CHARTS_PAINTED)


CANVAS_PIXELS = """(canvas) => {
    // A copy of what the canvas shows, then its pixels (a Uint8ClampedArray of RGBA bytes):
    // the visualization tab's canvases are drawn by a worker (transferControlToOffscreen),
    // and such a canvas has no context the page could read; drawn onto another canvas it
    // gives the last frame the worker sent.
    const copy = document.createElement('canvas');
    copy.width = canvas.width;
    copy.height = canvas.height;
    const ctx = copy.getContext('2d');
    ctx.drawImage(canvas, 0, 0);
    return ctx.getImageData(0, 0, copy.width, copy.height).data;
}"""

SHOWS_A_FRAME = f"""(canvas) => {{
    const data = ({CANVAS_PIXELS})(canvas);
    for (let i = 3; i < data.length; i += 4) if (data[i] > 0) return true;
    return false;
}}"""
"""True once the canvas shows something (the worker's frame reaches the page a moment after
the worker says it drew)."""

BYTES_BASE64 = """(data) => {
    let text = '';
    for (let i = 0; i < data.length; i += 0x8000)
        text += String.fromCharCode(...data.subarray(i, i + 0x8000));
    return btoa(text);
}"""
"""A Uint8Array's (or Uint8ClampedArray's) bytes as base64: Playwright hands a JavaScript
array to Python element by element (a canvas' millions of bytes took tens of seconds), a
string at once."""


def painted_pixels(canvas: Locator) -> bytes:
    """The RGBA bytes of a chart canvas once it has drawn a scene (``data-painted``, set by
    ui/src/components/chart-surface.ts whether the worker or the page drew it) and shows it."""
    expect(canvas).not_to_have_attribute("data-painted", "0")
    canvas.page.wait_for_function(SHOWS_A_FRAME, arg=canvas.element_handle())
    return base64.b64decode(canvas.evaluate(f"(c) => ({BYTES_BASE64})(({CANVAS_PIXELS})(c))"))
