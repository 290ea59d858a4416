"""A missing experiment or trial (deleted, or a wrong id in the address) is a not-found page
(issue 24, item 6), not an error notice above empty cards and tabs. In real Chromium."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from .conftest import Experiments, screenshot

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def test_a_missing_experiment_or_trial_is_a_not_found_page(
    page: Page, experiments: Experiments
) -> None:
    missing = 999_999
    for route, says in (
        (f"/experiments/{missing}", f"There is no experiment {missing}"),
        (f"/experiments/{missing}/visualization", f"There is no experiment {missing}"),
        (f"/trials/{missing}", f"There is no trial {missing}"),
    ):
        page.goto(f"{experiments.url}/#{route}")
        expect(page.get_by_test_id("not-found")).to_be_visible()
        main = page.locator("main")
        expect(main).to_contain_text(says)
        expect(main.get_by_role("link", name="See the experiments.")).to_be_visible()
        # Nothing of the page that was not found: no error notice, no tabs, no empty cards.
        for leftover in (".notice", "[role=tablist]", ".card", "canvas"):
            expect(main.locator(leftover)).to_have_count(0)
        assert page.title() == "Not found · PEDL"
    screenshot(page, "not-found")
    # An experiment that exists still opens (its page is not the not-found one).
    page.goto(f"{experiments.url}/#/experiments/{experiments.finished}")
    expect(page.locator("h1")).to_contain_text("ui-finished")
    expect(page.get_by_test_id("not-found")).to_have_count(0)
