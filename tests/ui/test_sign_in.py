"""The web UI's sign-in form in a real browser: a wrong password is refused, the right one
opens the experiment list, signing out (and a revoked token) brings the form back."""

from __future__ import annotations

import pytest
from playwright.sync_api import Browser, expect

from tests.accounts import ADMIN, ADMIN_PASSWORD

from .conftest import Experiments, screenshot

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def test_sign_in_and_out(browser: Browser, experiments: Experiments) -> None:
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    context.set_default_timeout(20_000)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda err: errors.append(str(err)))
    try:
        page.goto(f"{experiments.url}/#/experiments/{experiments.finished}")
        form = page.get_by_test_id("sign-in-form")
        expect(form).to_be_visible()
        screenshot(page, "sign-in")
        page.get_by_label("Username").fill(ADMIN)
        page.get_by_label("Password").fill("not the password")
        page.get_by_test_id("sign-in-submit").click()
        expect(form).to_contain_text("Wrong username or password")
        page.get_by_label("Password").fill(ADMIN_PASSWORD)
        page.get_by_test_id("sign-in-submit").click()
        # Signed in, on the page the address named.
        expect(page.get_by_test_id("account-name")).to_have_text(ADMIN)
        expect(page.locator("h1")).to_contain_text("ui-finished")
        page.goto(f"{experiments.url}/#/experiments")
        row = page.locator(
            f"[data-testid=experiment-row][data-experiment-id='{experiments.finished}']"
        )
        expect(row).to_be_visible()
        # A revoked token (signed out elsewhere) brings the form back at the next request.
        token = page.evaluate("sessionStorage.getItem('pedl.token')")
        experiments.master.http.post(
            "/auth/logout", headers={"Authorization": f"Bearer {token}"}
        ).raise_for_status()
        page.reload()
        # (Within the read process's token_cache_seconds, 5, and the list's poll, 5 s.)
        expect(page.get_by_test_id("sign-in-form")).to_be_visible(timeout=45_000)
        # Sign in again, then out with the button.
        page.get_by_label("Username").fill(ADMIN)
        page.get_by_label("Password").fill(ADMIN_PASSWORD)
        page.get_by_test_id("sign-in-submit").click()
        expect(page.get_by_test_id("account-name")).to_have_text(ADMIN)
        page.get_by_role("button", name="Sign out").click()
        expect(page.get_by_test_id("sign-in-form")).to_be_visible()
        assert page.evaluate("sessionStorage.getItem('pedl.token')") is None
    finally:
        context.close()
    assert errors == [], f"JavaScript errors on the page: {errors}"
