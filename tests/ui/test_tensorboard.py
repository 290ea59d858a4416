"""The experiment page's TensorBoard button in a real browser against a real master: it
starts the master's TensorBoard over the experiment and opens it in a new tab, signed in by
the browser's own session, showing every trial's metrics as scalars. TensorBoard's own page
works behind the master's checks: its POSTs (the time series it draws) pass the CSRF rule
with the header TensorBoard sends, and none of its requests is refused; the fonts it asks
for at the site's root (``/font-roboto/``) come from TensorBoard, not as the web UI's page."""

from __future__ import annotations

import time
from typing import Any

import pytest
from playwright.sync_api import Page

from tests.master.e2e import trials
from tests.waits import scaled, scaled_ms

from .conftest import Experiments, screenshot

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def test_tensorboard_button_opens_the_experiments_scalars(
    page: Page, experiments: Experiments
) -> None:
    http = experiments.master.http
    page.goto(f"{experiments.url}/#/experiments/{experiments.finished}")
    with page.context.expect_page(timeout=scaled_ms(90)) as opened:
        page.get_by_test_id("action-tensorboard").click()
    board = opened.value
    answers: list[tuple[str, str, int]] = []
    fonts: list[tuple[str, int, str]] = []
    board.on(
        "response",
        lambda r: (
            answers.append((r.request.method, r.url, r.status))
            if "/tensorboard/" in r.url
            else fonts.append((r.url, r.status, r.headers.get("content-type", "")))
            if "/font-roboto/" in r.url
            else None
        ),
    )
    board.wait_for_url("**/tensorboard/*/", timeout=scaled_ms(90))
    board_id = board.url.rstrip("/").rsplit("/", 1)[1]
    try:
        board.wait_for_load_state()
        tags: dict[str, Any] = board.evaluate(
            "async (url) => (await fetch(url)).json()",
            f"/tensorboard/{board_id}/data/plugin/scalars/tags",
        )
        runs = {
            f"experiment_{experiments.finished}/trial_{t['id']}"
            for t in trials(http, experiments.finished)
        }
        assert runs <= set(tags), tags
        for run in runs:
            assert {"PEDL/loss", "PEDL/val_loss"} <= set(tags[run]), tags[run]
        # TensorBoard's time series: drawn from its POSTs, which pass with its own header.
        deadline = time.monotonic() + scaled(60)
        while not any(m == "POST" and s == 200 for m, _, s in answers):
            assert time.monotonic() < deadline, answers
            board.wait_for_timeout(250)
        refused = [a for a in answers if a[2] in (401, 403)]
        assert not refused, refused
        wrong_fonts = [f for f in fonts if f[1] != 200 or "html" in f[2]]
        assert not wrong_fonts, wrong_fonts
        screenshot(board, "tensorboard")
    finally:
        assert http.post(f"/tensorboards/{board_id}/kill").status_code == 200
