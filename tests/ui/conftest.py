"""Fixtures of the browser tests: Debian's Chromium driven by Playwright (headless,
``--no-sandbox``, background networking off) against a real master process running real
experiments of the tiny model in ``tests/master/trial_model``.

The tests need the built UI (``make ui``) and ``/usr/bin/chromium`` (``make test`` installs
both); without the built UI they are skipped, saying so. Screenshots of every page go to
``build/screenshots/`` (a build artefact, not committed; test_screenshots.py makes the set of
the main pages, light and dark).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import pytest
from playwright._impl._api_structures import SetCookieParam
from playwright.sync_api import Browser, BrowserContext, Page, expect, sync_playwright

from pedl.config import parse_config
from pedl.db import Database
from pedl.db import experiments as experiments_repo
from pedl.master.api._session_cookie import CSRF_COOKIE, SESSION_COOKIE, csrf_token
from pedl.master.api._web_ui import UI_DIST
from pedl.vocabulary import ExperimentState
from tests.master.e2e import MasterProcess, create_experiment, trials, wait_for
from tests.waits import scaled, scaled_ms

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-background-networking", "--disable-dev-shm-usage"]
SCREENSHOTS = Path(__file__).resolve().parents[2] / "build" / "screenshots"

PAGE_TIMEOUT_MS = scaled_ms(20)
"""How long a browser action or an ``expect`` waits unless it says otherwise (a page that reads
the master and draws charts: well under a second on an idle machine; see :mod:`tests.waits`),
in place of Playwright's own defaults (30 s for actions, 5 s for ``expect``), which do not scale."""
expect.set_options(timeout=PAGE_TIMEOUT_MS)

CONFIG = """
name: {name}
description: {description}
labels: [ui-test]
hyperparameters:
  global_batch_size: 16
  lr: {lr}
  dropout_seed: {{type: int, minval: 1, maxval: 9}}
searcher: {searcher}
scheduling_unit: {unit}
min_validation_period: {{batches: {unit}}}
min_checkpoint_period: {{batches: 20}}
max_restarts: 0
reproducibility: {{experiment_seed: 11}}
environment:
  environment_variables: {env}
"""


def config(
    name: str,
    searcher: str,
    *,
    lr: str = "{type: double, minval: 0.001, maxval: 0.1}",
    unit: int = 5,
    env: list[str] | None = None,
    description: str = "a browser test",
) -> str:
    return CONFIG.format(
        name=name, description=description, lr=lr, searcher=searcher, unit=unit, env=env or []
    )


@pytest.fixture(scope="session")
def chromium_path() -> Path:
    if not (UI_DIST / "index.html").is_file():
        pytest.skip(f"the web UI is not built ({UI_DIST} has no index.html): run `make ui`")
    if not CHROMIUM.exists():
        pytest.fail(
            f"{CHROMIUM} is missing: `make test` installs it (apt-get install -y chromium)",
            pytrace=False,
        )
    return CHROMIUM


@pytest.fixture(scope="session")
def browser(chromium_path: Path) -> Iterator[Browser]:
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(
            executable_path=str(chromium_path), headless=True, args=CHROMIUM_ARGS
        )
        try:
            yield launched
        finally:
            launched.close()


@contextlib.contextmanager
def signed_in_tab(
    browser: Browser,
    master: MasterProcess,
    *,
    width: int = 1400,
    height: int = 900,
    timeout_ms: float = PAGE_TIMEOUT_MS,
) -> Iterator[Page]:
    """A tab signed in to ``master`` as its test administrator (the session of ``master.http``
    put where the UI's sign-in form puts it; tests/ui/test_sign_in.py uses the form), which
    fails the test if the page raised a JavaScript error."""
    context = browser.new_context(viewport={"width": width, "height": height})
    context.set_default_timeout(timeout_ms)
    sign_in_context(context, master)
    tab = context.new_page()
    errors: list[str] = []
    tab.on("pageerror", lambda err: errors.append(str(err)))
    try:
        yield tab
    finally:
        context.close()
    assert errors == [], f"JavaScript errors on the page: {errors}"


@pytest.fixture
def page(browser: Browser, experiments: Experiments) -> Iterator[Page]:
    """A tab signed in as the test administrator of the shared experiments' master."""
    with signed_in_tab(browser, experiments.master) as tab:
        yield tab


def sign_in_context(context: BrowserContext, master: MasterProcess) -> None:
    """Give ``context`` the session cookies of ``master.http``'s session, as signing in
    through the form sets them."""
    token = master.http.headers["Authorization"].removeprefix("Bearer ")
    session: SetCookieParam = {"name": SESSION_COOKIE, "value": token, "url": master.url}
    csrf: SetCookieParam = {"name": CSRF_COOKIE, "value": csrf_token(token), "url": master.url}
    session["httpOnly"] = True
    session["sameSite"] = csrf["sameSite"] = "Strict"
    context.add_cookies([session, csrf])


def screenshot(page: Page, name: str) -> None:
    """Save the page as ``build/screenshots/<name>.png`` (``name`` may hold a folder)."""
    (SCREENSHOTS / f"{name}.png").parent.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"{name}.png"), full_page=True)


def master_database(master: MasterProcess) -> Database:
    """``master``'s own SQLite database, to write what a test shows straight into it."""
    return Database(f"sqlite:///{master.home / 'pedl' / 'pedl.db'}")


@contextlib.contextmanager
def seeded_master(
    tmp_path_factory: pytest.TempPathFactory, name: str
) -> Iterator[tuple[MasterProcess, Database]]:
    """A master of its own (one slot; no trial runs on it) and its database, for a module
    whose experiments are written into the database (see :func:`ended_experiment`)."""
    master = MasterProcess(tmp_path_factory.mktemp(name), cpu_slots=1).start()
    database = master_database(master)
    try:
        yield master, database
    finally:
        database.dispose()
        master.stop()


def ended_experiment(
    database: Database,
    text: str,
    *,
    name: str,
    metric: str,
    smaller_is_better: bool,
    progress: float = 1.0,
    description: str | None = None,
    labels: tuple[str, ...] = (),
) -> tuple[int, datetime]:
    """An experiment of config ``text`` written into ``database`` COMPLETED, so that the
    master's orchestrator starts no searcher for it: its id and creation time."""
    with database.session(write=True) as session:
        experiment = experiments_repo.create_experiment(
            session,
            config=parse_config(text).as_dict(),
            config_text=text,
            model_definition=b"",
            owner="admin",
            name=name,
            description=description,
            labels=labels,
            searcher_metric=metric,
            smaller_is_better=smaller_is_better,
        )
        experiment.state = ExperimentState.COMPLETED
        experiment.progress = progress
        return experiment.id, experiment.created_at


@dataclass(frozen=True)
class Experiments:
    master: MasterProcess
    finished: int
    """A random search of three trials, COMPLETED."""
    errored: int
    """One trial whose build_model raises: the experiment ends in ERROR."""
    live: int
    """One slow trial, running while the tests look at it."""
    pausable: int
    """Another slow trial, for pausing from the UI."""

    @property
    def url(self) -> str:
        return self.master.url


@pytest.fixture(scope="session")
def experiments(
    chromium_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Experiments]:
    master = MasterProcess(tmp_path_factory.mktemp("ui-master"), cpu_slots=2).start()
    try:
        http = master.http
        random = "{name: random, metric: val_loss, max_trials: 3, max_length: {batches: 20}}"
        finished = create_experiment(http, config("ui-finished", random))
        single = "{name: single, metric: val_loss, max_length: {batches: 20}}"
        errored = create_experiment(
            http,
            config("ui-errored", single, lr="0.01").replace(
                "hyperparameters:\n", "hyperparameters:\n  fail_in_build: true\n"
            ),
        )
        wait_for(http, finished, {"COMPLETED"}, timeout=300, master=master)
        wait_for(http, errored, {"ERROR"}, timeout=300, master=master)
        # They run through every browser test after this: at 0.05 s a batch the two trials
        # and the master took a whole core (measured: master 55%, trials 21% each); at 0.25 s,
        # 27% of one, and a report still comes every half second.
        slow = "{name: single, metric: val_loss, max_length: {batches: 100000}}"
        live, pausable = (
            create_experiment(
                http,
                config(
                    name,
                    slow,
                    lr="0.01",
                    unit=2,
                    env=["PEDL_TEST_SLEEP=0.25", "PEDL_SYSTEM_METRICS_INTERVAL=1"],
                ),
            )
            for name in ("ui-live", "ui-pausable")
        )
        yield Experiments(master, finished, errored, live, pausable)
        for experiment_id in (live, pausable):
            http.post(f"/experiments/{experiment_id}/kill")
    finally:
        master.stop()


def running_trial(experiments: Experiments, experiment_id: int) -> int:
    """The id of the experiment's trial once it is RUNNING and has trained some batches."""
    deadline = time.monotonic() + scaled(180)
    while time.monotonic() < deadline:
        for trial in trials(experiments.master.http, experiment_id):
            if trial["state"] == "RUNNING" and trial["total_batches"] > 0:
                return int(trial["id"])
        time.sleep(0.2)
    raise AssertionError(
        f"no trial of experiment {experiment_id} ran:\n{experiments.master.log()[-3000:]}"
    )
