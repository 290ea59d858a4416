"""Every test runs signed in as the test masters' administrator (see :mod:`tests.accounts`),
with the CLI's and the SDK's saved tokens in a temporary directory. The masters that tests
start keep no spare warm workers (``PEDL_SPARE_WORKERS=0``: most run no trial, and each spare
imports TensorFlow on CI's two cores) unless a test asks for them. Their trials run as the
masters' own user (``PEDL_TRIAL_USER=''``; the default, ``nobody``, applies where a master runs
as root, as CI does): the tests' checkpoint directories and the files their model code
exchanges with them lie in pytest's temporary directories, root's with mode 0700, out of
``nobody``'s reach. ``tests/isolation/test_trial_user.py`` runs masters with a trial user."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.accounts import ADMIN, ADMIN_PASSWORD
from tests.diagnostics import event_loop_tasks, port_sockets, thread_stacks
from tests.waits import ENV as WAIT_SCALE_ENV
from tests.waits import SCALE as WAIT_SCALE


def _no_hypothesis_deadline() -> None:
    """Property tests judge answers, never speed: Hypothesis's default 200 ms deadline per
    example fails them on a loaded machine (a busy CI runner), so no test here has one.
    (.venv-estimator, which runs tests/estimator, has no Hypothesis.)"""
    try:
        from hypothesis import settings
    except ImportError:
        return
    settings.register_profile("pedl", deadline=None)
    settings.load_profile("pedl")


_no_hypothesis_deadline()

_config_dir = ""

_THREADS_SECTION = "threads when the request timed out"
_LOOPS_SECTION = "event loop tasks then"
_SOCKETS_SECTION = "TCP sockets of port"


def _set_test_environment() -> None:
    os.environ["PEDL_CONFIG_DIR"] = _config_dir
    os.environ["PEDL_ADMIN_PASSWORD"] = ADMIN_PASSWORD
    os.environ["PEDL_USER"] = ADMIN
    os.environ["PEDL_PASSWORD"] = ADMIN_PASSWORD
    os.environ["PEDL_SPARE_WORKERS"] = "0"
    os.environ["PEDL_TRIAL_USER"] = ""


def pytest_configure(config: pytest.Config) -> None:
    global _config_dir
    _config_dir = tempfile.mkdtemp(prefix="pedl-test-config-")
    _set_test_environment()


@pytest.fixture(autouse=True)
def _test_environment() -> None:
    """Set the variables again before every test: a master served in the test process takes
    its secrets out of the process's environment when it starts (see docs/security.md), so the
    order tests run in (pytest-xdist's included) must not decide what the next test sees."""
    _set_test_environment()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """pytest-timeout's limit (``timeout`` in pyproject.toml), the net under a test that
    hangs, scales with the machine as the tests' own waits do (:mod:`tests.waits`): a test
    whose scaled waits add up to more than the fixed limit would otherwise be killed on a
    loaded machine while its work still went on. A test's own ``timeout`` mark stays."""
    limit = float(config.getini("timeout") or 0)
    if limit <= 0:
        return
    for item in items:
        if item.get_closest_marker("timeout") is None:
            item.add_marker(pytest.mark.timeout(round(limit * WAIT_SCALE)))


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """``--dist worksteal`` cuts its queues at module edges (:mod:`tests.module_stealing`)."""
    if config.getvalue("dist") != "worksteal":
        return None
    from tests.module_stealing import ModuleStealing

    return ModuleStealing(config, log)


def pytest_report_header() -> str:
    """The factor the tests' waits are scaled by (see :mod:`tests.waits`): imported here,
    in the session's own process, so pytest-xdist's workers inherit it."""
    return f"waits scaled by {WAIT_SCALE:g} ({WAIT_SCALE_ENV} to set it)"


def pytest_unconfigure(config: pytest.Config) -> None:
    if _config_dir:
        shutil.rmtree(_config_dir, ignore_errors=True)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    """A test that fails on an HTTP timeout shows where every thread of the test process was
    at that moment: a master served in this process (``LiveServer``) is among them, so the
    report says what kept it from answering."""
    outcome = yield
    if call.excinfo is not None and call.excinfo.errisinstance(httpx.TimeoutException):
        report = outcome.get_result()  # type: ignore[attr-defined]
        report.sections.append((_THREADS_SECTION, thread_stacks()))
        report.sections.append((_LOOPS_SECTION, event_loop_tasks()))
        request = getattr(call.excinfo.value, "_request", None)  # httpx keeps it there
        if isinstance(request, httpx.Request) and request.url.port is not None:
            port = request.url.port
            report.sections.append((f"{_SOCKETS_SECTION} {port} then", port_sockets(port)))


@pytest.hookimpl(trylast=True)
def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Repeat the sockets and event-loop sections of tests that failed on an HTTP timeout at
    the very end of the output, after the durations: a CI log is often shown by its head and
    tail only, and these sections say why a request got no answer. Of the threads, only
    each one's name and kernel state."""
    for report in terminalreporter.stats.get("failed", []):
        for title, content in getattr(report, "sections", []):
            if title == _THREADS_SECTION:
                terminalreporter.write_sep("-", f"{report.nodeid}: threads' kernel states")
                terminalreporter.write_line(
                    "\n".join(line for line in content.splitlines() if line.startswith("---"))
                )
            elif title.startswith((_LOOPS_SECTION, _SOCKETS_SECTION)):
                terminalreporter.write_sep("-", f"{report.nodeid}: {title}")
                terminalreporter.write_line(content)
