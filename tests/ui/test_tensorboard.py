"""The experiment page's TensorBoard button in a real browser against a real master: it
starts the master's TensorBoard over the experiment and opens it in a new tab, signed in by
the browser's own session, showing every trial's metrics as scalars."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import Page

from tests.master.e2e import trials

from .conftest import Experiments, screenshot

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def test_tensorboard_button_opens_the_experiments_scalars(
    page: Page, experiments: Experiments
) -> None:
    http = experiments.master.http
    page.goto(f"{experiments.url}/#/experiments/{experiments.finished}")
    with page.context.expect_page(timeout=90_000) as opened:
        page.get_by_test_id("action-tensorboard").click()
    board = opened.value
    board.wait_for_url("**/tensorboard/*/", timeout=90_000)
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
        screenshot(board, "tensorboard")
    finally:
        assert http.post(f"/tensorboards/{board_id}/kill").status_code == 200
