"""The web UI's sign-in form in a real browser: a wrong password is refused, the right one
opens the experiment list, signing out (and a revoked token) brings the form back. The
session lives in an HttpOnly cookie (no page script can read the token), so a deep link
opened in another tab of the same browser needs no second sign-in; the form says where
`make demo`'s password is."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, BrowserContext, Page, expect

from pedl.master.api._session_cookie import CSRF_COOKIE, SESSION_COOKIE
from tests.accounts import ADMIN, ADMIN_PASSWORD
from tests.waits import scaled_ms

from .conftest import PAGE_TIMEOUT_MS, Experiments, screenshot

pytestmark = [pytest.mark.browser, pytest.mark.slow]


@pytest.fixture
def context(browser: Browser) -> Iterator[BrowserContext]:
    """A fresh browser (no cookies); its pages' JavaScript errors fail the test."""
    fresh = browser.new_context(viewport={"width": 1400, "height": 900})
    fresh.set_default_timeout(PAGE_TIMEOUT_MS)
    errors: list[str] = []
    fresh.on("page", lambda page: page.on("pageerror", lambda err: errors.append(str(err))))
    try:
        yield fresh
    finally:
        fresh.close()
    assert errors == [], f"JavaScript errors on the page: {errors}"


def _sign_in(page: Page, password: str = ADMIN_PASSWORD) -> None:
    page.get_by_label("Username").fill(ADMIN)
    page.get_by_label("Password").fill(password)
    page.get_by_test_id("sign-in-submit").click()


def _session_token(context: BrowserContext) -> str:
    return next(c["value"] for c in context.cookies() if c["name"] == SESSION_COOKIE)


def test_sign_in_and_out(context: BrowserContext, experiments: Experiments) -> None:
    page = context.new_page()
    page.goto(f"{experiments.url}/#/experiments/{experiments.finished}")
    form = page.get_by_test_id("sign-in-form")
    expect(form).to_be_visible()
    expect(page.get_by_test_id("sign-in-hint")).to_contain_text(".pedl-demo/admin-password")
    screenshot(page, "sign-in")
    _sign_in(page, "not the password")
    expect(form).to_contain_text("Wrong username or password")
    _sign_in(page)
    # Signed in, on the page the address named.
    expect(page.get_by_test_id("account-name")).to_have_text(ADMIN)
    expect(page.locator("h1")).to_contain_text("ui-finished")
    # The token is in an HttpOnly cookie: no page script reads it.
    token = _session_token(context)
    seen = page.evaluate(
        "document.cookie + JSON.stringify(Object.entries(sessionStorage))"
        " + JSON.stringify(Object.entries(localStorage))"
    )
    assert token not in seen and CSRF_COOKIE in seen
    page.goto(f"{experiments.url}/#/experiments")
    row = page.locator(f"[data-testid=experiment-row][data-experiment-id='{experiments.finished}']")
    expect(row).to_be_visible()
    # A revoked token (signed out elsewhere) brings the form back at the next request.
    experiments.master.http.post(
        "/auth/logout", headers={"Authorization": f"Bearer {token}"}
    ).raise_for_status()
    page.reload()
    # (Within the read process's token_cache_seconds, 5, and the list's poll, 5 s.)
    expect(page.get_by_test_id("sign-in-form")).to_be_visible(timeout=scaled_ms(45))
    # Sign in again, then out with the button: the master clears the cookies.
    _sign_in(page)
    expect(page.get_by_test_id("account-name")).to_have_text(ADMIN)
    page.get_by_role("button", name="Sign out").click()
    expect(page.get_by_test_id("sign-in-form")).to_be_visible()
    assert [c["name"] for c in context.cookies()] == []


def test_a_deep_link_in_a_second_tab_needs_no_sign_in(
    context: BrowserContext, experiments: Experiments
) -> None:
    first = context.new_page()
    first.goto(f"{experiments.url}/#/experiments")
    _sign_in(first)
    expect(first.get_by_test_id("account-name")).to_have_text(ADMIN)
    # A bookmark of a trial, opened in a new tab of the same browser.
    trial = experiments.master.http.get(f"/experiments/{experiments.finished}/trials").json()
    trial_id = trial["items"][0]["id"]
    second = context.new_page()
    second.goto(f"{experiments.url}/#/trials/{trial_id}")
    expect(second.locator("h1")).to_contain_text(f"Trial {trial_id}")
    expect(second.get_by_test_id("account-name")).to_have_text(ADMIN)
    expect(second.get_by_test_id("sign-in-form")).to_have_count(0)
    # The second tab's writes carry the CSRF header: editing a description works there.
    http, path = experiments.master.http, f"/experiments/{experiments.finished}"
    before = http.get(path).json()["description"]
    second.goto(f"{experiments.url}/#{path}")
    expect(second.locator("h1")).to_contain_text("ui-finished")
    try:
        second.get_by_test_id("edit-description").click()
        second.get_by_test_id("description-input").fill("edited in a second tab")
        second.get_by_test_id("save-description").click()
        expect(second.get_by_text("edited in a second tab")).to_be_visible()
        assert http.get(path).json()["description"] == "edited in a second tab"
        screenshot(second, "second-tab")
    finally:
        http.patch(path, json={"description": before}).raise_for_status()
