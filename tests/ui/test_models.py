"""The model registry in a real browser against a real master: "Register" on a checkpoint of
the experiment's checkpoints table makes it a model's version, and the models page lists the
model and its versions."""

from __future__ import annotations

import pytest
from playwright.sync_api import Locator, Page, expect

from .conftest import Experiments, screenshot

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def _registrable(page: Page, n: int) -> Locator:
    """The ``n``-th row with a Register button, pinned by its checkpoint (the button goes
    once clicked)."""
    rows = page.get_by_test_id("checkpoint-row").filter(
        has=page.get_by_role("button", name="Register")
    )
    expect(rows.nth(n)).to_be_visible()
    key = rows.nth(n).get_attribute("data-row-key")
    return page.locator(f"[data-testid=checkpoint-row][data-row-key='{key}']")


def test_register_a_checkpoint_and_see_it_on_the_models_page(
    page: Page, experiments: Experiments
) -> None:
    http = experiments.master.http
    page.goto(f"{experiments.url}/#/experiments/{experiments.finished}")
    page.get_by_test_id("tab-checkpoints").click()
    row = _registrable(page, 0)
    row.get_by_role("button", name="Register").click()
    row.get_by_label("Model name").fill("ui-registered")
    row.get_by_role("button", name="OK").click()
    link = row.get_by_role("link", name="ui-registered v1")
    expect(link).to_be_visible()
    versions = http.get("/models/ui-registered/versions").json()
    assert [v["version"] for v in versions] == [1]
    uuid = versions[0]["checkpoint"]["uuid"]
    assert versions[0]["checkpoint"]["experiment_id"] == experiments.finished

    page.get_by_role("link", name="Models").click()
    model_row = page.get_by_test_id("model-row").filter(has_text="ui-registered")
    expect(model_row).to_contain_text("1")
    screenshot(page, "models")
    model_row.get_by_role("link", name="ui-registered").click()
    version = page.get_by_test_id("version-row").first
    expect(version).to_contain_text(uuid[:8])
    expect(version).to_contain_text("completed", ignore_case=True)
    screenshot(page, "model-versions")

    # A second registration of another checkpoint into the same model: version 2.
    page.goto(f"{experiments.url}/#/experiments/{experiments.finished}")
    page.get_by_test_id("tab-checkpoints").click()
    second = _registrable(page, 1)  # the first is the one registered above
    second.get_by_role("button", name="Register").click()
    second.get_by_label("Model name").fill("ui-registered")
    second.get_by_role("button", name="OK").click()
    expect(page.get_by_role("link", name="ui-registered v2")).to_be_visible()
    assert [v["version"] for v in http.get("/models/ui-registered/versions").json()] == [2, 1]
