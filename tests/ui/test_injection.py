"""Markup in what users and trials write is shown by the UI as text and never run, and the
master's Content-Security-Policy would stop it if it were.

An experiment (and a second one whose trial fails) is created through the API with script and
HTML in every user-controlled string the UI shows: the name, the description, the labels, a
hyperparameter's name and value, and, from the trial itself (``injection_model/train.py``), a
log line, training and validation metric names and an error message. (User names are not
among them: the master takes only ``[A-Za-z0-9._@-]``.) Every page that shows them is
visited; each string must be in the page as its literal text, ``window.__pwned`` must stay
undefined and no dialog may open. The walk runs twice: with the page's CSP bypassed (the UI's
own escaping alone) and with it enforced (where no violation may be reported either, which
also shows that the UI renders under the policy).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlencode

import httpx
import pytest
from playwright.sync_api import Browser, BrowserContext, Page, Route, expect

from tests.master.e2e import MasterProcess, create_experiment, trials, wait_for
from tests.waits import scaled

from .conftest import PAGE_TIMEOUT_MS, screenshot, sign_in_context

pytestmark = [pytest.mark.browser, pytest.mark.slow]

MODEL_DIR = Path(__file__).parent / "injection_model"
PAYLOAD = (
    "<script>window.__pwned=1</script>"
    '<img src=x onerror="window.__pwned=1;alert(1)">'
    '"><svg onload="window.__pwned=1;alert(1)">'
)


def marked(what: str) -> str:
    return f"{what} {PAYLOAD}"


NAME = marked("name")
FAILING_NAME = marked("failing name")
DESCRIPTION = marked("description")
LABELS = [marked("label one"), marked("label two")]
HP_NAME = marked("hp")
HP_VALUE = marked("hp value")
LOG_LINE = marked("log line")
METRIC = marked("metric")
ERROR = marked("error")

# Recorded in every page before the app runs: CSP violations and whether markup ran.
WATCH = """
window.__violations = [];
document.addEventListener('securitypolicyviolation', (e) =>
    window.__violations.push(`${e.violatedDirective} ${e.blockedURI} ${e.sample}`));
"""


def config(name: str, *, fail: bool) -> str:
    hyperparameters: dict[str, object] = {
        "global_batch_size": 16,
        # Categorical, not const: the trials table leaves out constants.
        HP_NAME: {"type": "categorical", "vals": [HP_VALUE]},
        "pedl_test_log": LOG_LINE,
        "pedl_test_metric": METRIC,
    }
    if fail:
        hyperparameters["pedl_test_fail"] = ERROR
    return json.dumps(
        {
            "name": name,
            "description": DESCRIPTION,
            "labels": LABELS,
            "entrypoint": "train.py",
            "hyperparameters": hyperparameters,
            "searcher": {"name": "single", "metric": "val_loss", "max_length": {"batches": 8}},
            "scheduling_unit": 4,
            "min_validation_period": {"batches": 4},
            "max_restarts": 0,
        }
    )


@dataclass(frozen=True)
class Injected:
    master: MasterProcess
    experiment: int
    trial: int
    failed_experiment: int
    failed_trial: int


@pytest.fixture(scope="module")
def injected(chromium_path: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Injected]:
    master = MasterProcess(tmp_path_factory.mktemp("injection-master"), cpu_slots=2).start()
    try:
        http = master.http
        good = create_experiment(http, config(NAME, fail=False), MODEL_DIR)
        bad = create_experiment(http, config(FAILING_NAME, fail=True), MODEL_DIR)
        wait_for(http, good, {"COMPLETED"}, timeout=300, master=master)
        wait_for(http, bad, {"ERROR"}, timeout=300, master=master)
        (trial,) = trials(http, good)
        (failed,) = trials(http, bad)
        assert ERROR in failed["error"]["message"], failed["error"]
        yield Injected(master, good, trial["id"], bad, failed["id"])
    finally:
        master.stop()


@dataclass
class Tab:
    page: Page
    dialogs: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def pwned(self) -> object:
        return self.page.evaluate("window.__pwned")

    def violations(self) -> list[str]:
        found: list[str] = self.page.evaluate("window.__violations")
        return found


def new_context(browser: Browser, master: MasterProcess, *, bypass_csp: bool) -> BrowserContext:
    """A signed-in browser context (as tests/ui/conftest.py's ``page``)."""
    context = browser.new_context(viewport={"width": 1400, "height": 900}, bypass_csp=bypass_csp)
    context.set_default_timeout(PAGE_TIMEOUT_MS)
    sign_in_context(context, master)
    context.add_init_script(WATCH)
    return context


def open_tab(context: BrowserContext) -> Tab:
    tab = Tab(context.new_page())
    tab.page.on("pageerror", lambda err: tab.errors.append(str(err)))

    def on_dialog(dialog: object) -> None:
        tab.dialogs.append(dialog.message)  # type: ignore[attr-defined]
        dialog.dismiss()  # type: ignore[attr-defined]

    tab.page.on("dialog", on_dialog)
    return tab


def pages(run: Injected) -> list[tuple[str, str, list[str]]]:
    """Each page (a name for its screenshot, its route) and the user-controlled strings it
    shows."""
    experiment, trial = f"/experiments/{run.experiment}", f"/trials/{run.trial}"
    curves = f"{experiment}/visualization?{urlencode({'metric': f'val_{METRIC}'})}"
    return [
        ("list", "/experiments", [NAME, FAILING_NAME, DESCRIPTION, *LABELS]),
        ("experiment", experiment, [NAME, DESCRIPTION, *LABELS]),
        ("visualization", f"{experiment}/visualization", [f"val_{METRIC}"]),
        # The learning curves of that metric: the chart's caption names it.
        ("curves", curves, [f"val_{METRIC}"]),
        ("trials", f"{experiment}/trials", [HP_NAME, HP_VALUE]),
        ("checkpoints", f"{experiment}/checkpoints", []),
        # The config tab shows the config as YAML: the strings quoted, as JSON writes them.
        (
            "config",
            f"{experiment}/config",
            [json.dumps(s, ensure_ascii=False) for s in (NAME, DESCRIPTION, HP_NAME, HP_VALUE)],
        ),
        ("trial", trial, [NAME, HP_NAME, HP_VALUE]),
        ("trial-metrics", f"{trial}?tab=metrics", [METRIC, f"val_{METRIC}"]),
        ("trial-logs", f"{trial}?tab=logs", [LOG_LINE]),
        ("trial-error", f"/trials/{run.failed_trial}", [FAILING_NAME, ERROR]),
        ("cluster", "/cluster", []),
    ]


@pytest.mark.parametrize("csp", ["bypassed", "enforced"])
def test_markup_is_shown_as_text_and_never_run(
    browser: Browser, injected: Injected, csp: str
) -> None:
    context = new_context(browser, injected.master, bypass_csp=csp == "bypassed")
    try:
        tab = open_tab(context)
        body = tab.page.locator("body")
        for name, route, texts in pages(injected):
            tab.page.goto(f"{injected.master.url}/#{route}")
            for text in texts:
                # textContent: markup the UI had parsed as HTML would not be there literally.
                expect(body, f"{route} shows {text!r} as text").to_contain_text(text)
            tab.page.wait_for_timeout(300)  # an image's onerror, an svg's onload
            assert tab.pwned() is None, f"markup ran on {route}"
            assert tab.dialogs == [], f"a dialog opened on {route}: {tab.dialogs}"
            if csp == "enforced":
                assert tab.violations() == [], f"CSP violations on {route}"
            screenshot(tab.page, f"injection-{csp}-{name}")
        assert tab.errors == [], f"JavaScript errors: {tab.errors}"
    finally:
        context.close()


INJECTED_SCRIPT = "<script>window.__pwned = 1</script>"
INJECT_INTO_DOM = """() => {
    const script = document.createElement('script');
    script.textContent = 'window.__pwned = 2';
    document.body.append(script);
    document.body.insertAdjacentHTML('beforeend', '<img src=x onerror="window.__pwned = 3">');
}"""


def test_ui_responses_carry_the_policy(injected: Injected) -> None:
    with httpx.Client(base_url=injected.master.url, timeout=scaled(30)) as http:
        page = http.get(f"/experiments/{injected.experiment}")
        assert page.status_code == 200 and "text/html" in page.headers["content-type"]
        asset = http.get("/" + page.text.split('src="./', 1)[1].split('"', 1)[0])
        assert asset.status_code == 200
        for response in (page, asset, http.get("/assets/missing.js")):
            assert response.headers["x-content-type-options"] == "nosniff"
            policy = response.headers["content-security-policy"]
            for directive in (
                "default-src 'self'",
                "object-src 'none'",
                "base-uri 'none'",
                "frame-ancestors 'none'",
            ):
                assert directive in policy, (response.url, policy)
            assert "unsafe-inline" not in policy and "unsafe-eval" not in policy, policy
        # The page's own inline script (index.html's early requests) is allowed by its hash.
        assert "script-src 'self' 'sha256-" in page.headers["content-security-policy"]


@pytest.mark.parametrize("csp", ["enforced", "bypassed"])
def test_an_injected_inline_script_is_blocked(
    browser: Browser, injected: Injected, csp: str
) -> None:
    """A script put into the served page, and markup put into the DOM, do not run under the
    policy; with the policy bypassed the same injections do run (the test can fail)."""
    context = new_context(browser, injected.master, bypass_csp=csp == "bypassed")
    try:

        def inject(route: Route) -> None:
            response = route.fetch()
            html = response.text().replace("</body>", f"{INJECTED_SCRIPT}</body>")
            route.fulfill(response=response, body=html)

        context.route(f"{injected.master.url}/", inject)
        tab = open_tab(context)
        tab.page.goto(f"{injected.master.url}/#/experiments/{injected.experiment}")
        expect(tab.page.get_by_test_id("experiment-labels")).to_contain_text(LABELS[0])
        # index.html's own inline script ran (it starts the experiment's requests).
        assert tab.page.evaluate("typeof window.__pedlPrefetch") == "object"
        if csp == "bypassed":
            assert tab.pwned() == 1
            tab.page.evaluate(INJECT_INTO_DOM)
            tab.page.wait_for_function("window.__pwned === 3")
            return
        assert tab.pwned() is None
        tab.page.evaluate(INJECT_INTO_DOM)
        tab.page.wait_for_timeout(500)
        # The reports are events, late on a busy machine: wait for them (not in the page:
        # wait_for_function's polling is an eval the policy refuses).
        deadline = time.monotonic() + scaled(10)
        while len(tab.violations()) < 3 and time.monotonic() < deadline:
            tab.page.wait_for_timeout(100)
        assert tab.pwned() is None
        violations = tab.violations()
        assert len(violations) == 3, violations
        assert all(v.startswith("script-src") for v in violations), violations
        assert tab.dialogs == [] and tab.errors == []
    finally:
        context.close()
