"""An experiment's Config tab in Chromium against a real master (issue 35, point 5): the
effective config without its unset (null) compatibility fields until asked for, and the
config as submitted beside it, the text as written (the master's ``original_config``)."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from .conftest import Experiments, screenshot

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def test_the_config_as_submitted_beside_the_effective_one(
    page: Page, experiments: Experiments
) -> None:
    http = experiments.master.http
    body = http.get(f"/experiments/{experiments.finished}").json()
    submitted = body["original_config"]
    assert "name: ui-finished" in submitted and "checkpoint_storage" not in submitted
    page.goto(f"{experiments.url}/#/experiments/{experiments.finished}/config")
    yaml = page.get_by_test_id("config-yaml")
    effective = page.get_by_test_id("config-view-effective")
    expect(effective).to_be_checked()
    # The effective config: the defaults filled in (its storage), no unset field shown.
    expect(yaml).to_contain_text("checkpoint_storage:")
    assert ": null" not in yaml.inner_text()
    expect(page.get_by_test_id("config-note")).to_contain_text("defaults filled in")

    page.get_by_test_id("config-view-submitted").check()
    expect(yaml).not_to_contain_text("checkpoint_storage:")
    expect(yaml).to_contain_text("labels: [ui-test]")  # as written, not as the master keeps it
    assert yaml.inner_text().strip() == submitted.strip()
    expect(page.get_by_test_id("config-show-nulls")).to_be_hidden()
    expect(page.get_by_test_id("config-note")).to_contain_text("As its submitter wrote it")
    screenshot(page, "experiment-config-submitted")

    effective.check()
    expect(yaml).to_contain_text("checkpoint_storage:")
    page.get_by_test_id("config-show-nulls").check()
    expect(yaml).to_contain_text(": null")
