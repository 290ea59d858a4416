"""The model registry in a real browser against a real master: "Register" on a checkpoint of
the experiment's checkpoints table makes it a model's version, and the models page lists the
model and its versions; after a reload the registered checkpoint shows its version instead of
"Register". The register field: focused, a blank name refused with a reason, Cancel, the
existing models to pick from, and a checkpoint already in the model refused with the version
that holds it."""

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

    # After a reload the registered checkpoint shows its version, not "Register".
    page.goto(f"{experiments.url}/#/experiments/{experiments.finished}")
    page.get_by_test_id("tab-checkpoints").click()
    registered = page.locator(f"[data-testid=checkpoint-row][data-row-key='{uuid}']")
    expect(registered.get_by_role("link", name="ui-registered v1")).to_be_visible()
    expect(registered.get_by_role("button", name="Register")).to_have_count(0)
    # A second registration of another checkpoint into the same model: version 2.
    second = _registrable(page, 0)
    second.get_by_role("button", name="Register").click()
    second.get_by_label("Model name").fill("ui-registered")
    second.get_by_role("button", name="OK").click()
    expect(page.get_by_role("link", name="ui-registered v2")).to_be_visible()
    assert [v["version"] for v in http.get("/models/ui-registered/versions").json()] == [2, 1]


def test_register_field_helps_and_refuses_a_checkpoint_twice(
    page: Page, experiments: Experiments
) -> None:
    http = experiments.master.http
    assert http.post("/models", json={"name": "ui-picked"}).status_code == 201
    page.goto(f"{experiments.url}/#/experiments/{experiments.finished}")
    page.get_by_test_id("tab-checkpoints").click()
    row = _registrable(page, 0)
    uuid = row.get_attribute("data-row-key")
    row.get_by_role("button", name="Register").click()
    field = row.get_by_label("Model name")
    expect(field).to_be_focused()
    # The existing models to pick from.
    expect(row.get_by_test_id("model-names").locator("option[value='ui-picked']")).to_have_count(1)
    # OK with a blank name says why.
    row.get_by_role("button", name="OK").click()
    expect(row.get_by_role("alert")).to_contain_text("Enter a model name")
    screenshot(page, "register-blank")
    # Cancel: the Register button again.
    row.get_by_role("button", name="Cancel").click()
    expect(row.get_by_label("Model name")).to_have_count(0)
    expect(row.get_by_role("button", name="Register")).to_be_focused()
    # Registered meanwhile (another tab, the CLI): the master refuses it again, naming the
    # version, and the field says so.
    done = http.post("/models/ui-picked/versions", json={"checkpoint_uuid": uuid})
    assert done.status_code == 201, done.text
    row.get_by_role("button", name="Register").click()
    row.get_by_label("Model name").fill("ui-picked")
    row.get_by_role("button", name="OK").click()
    expect(row.get_by_role("alert")).to_contain_text("already version 1 of model 'ui-picked'")
    screenshot(page, "register-twice")
    assert [v["version"] for v in http.get("/models/ui-picked/versions").json()] == [1]
