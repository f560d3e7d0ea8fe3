"""End-to-end tests in Debian's Chromium against a live server.

The server is the product's own daphne (`manage.py serve`, static files included) in a
child process, on the tests' database, with the in-process worker and the in-memory
channel layer: everything a run, a decision and a
live push go through happens inside that one server process, exactly as in the
single-machine product. The test process writes users and sessions to the database (the
tests are transactional, so the server sees them) and drives the browsers.

When a test fails (or its pages logged an error), every page it opened is kept as test
artefacts under `ARTEFACTS` (`var/test-artefacts/`, or $BEAMWEAVER_TEST_ARTEFACTS): a
full-page screenshot at the desktop width and one at a phone's (390 x 844), and the
page's console log, so a failure in CI can be seen, not only read.
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

from tests.reviews.conftest import _review_graphs  # noqa: F401  (registers the graphs)
from tests.reviews.graphs import REVIEW_GRAPHS
from tests.support.processes import ROOT, child_env, stop

CHROMIUM = "/usr/bin/chromium"
DESKTOP = {"width": 1100, "height": 900}
PHONE = {"width": 390, "height": 844}
ARTEFACTS = Path(os.environ.get("BEAMWEAVER_TEST_ARTEFACTS") or ROOT / "var" / "test-artefacts")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait_until_up(url: str, proc: subprocess.Popen[Any], log: Path, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"The server exited ({proc.returncode}):\n{log.read_text()}")
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.2)
    raise RuntimeError(f"The server did not start within {timeout}s:\n{log.read_text()}")


@pytest.fixture(scope="module")
def daphne_server(
    request: pytest.FixtureRequest,
    django_db_setup: Any,
    django_db_blocker: Any,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[str]:
    """A daphne serving the project on the test database; yields its base URL.

    One per test module: its in-process workers claim queued runs from the test database,
    so it must not outlive the tests that expect it (the tests collected after it queue
    and claim runs themselves). A module's `SERVER_ENV` dict adds to or overrides the
    server's environment."""
    with django_db_blocker.unblock():
        env = child_env(
            **{
                "BEAMWEAVER_GRAPHS": json.dumps(REVIEW_GRAPHS),
                "BEAMWEAVER_WORKER_MODE": "inline",
                "BEAMWEAVER_POLL_SECONDS": "0.2",
                "BEAMWEAVER_DEMO_MODEL": "scripted",
                "BEAMWEAVER_LOG_LEVEL": "WARNING",
                "DEBUG": "0",
                **getattr(request.module, "SERVER_ENV", {}),
            }
        )
    env.pop("REDIS_URL", None)
    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    log = tmp_path_factory.mktemp("server") / "daphne.log"
    with log.open("w") as out:
        proc = subprocess.Popen(
            [
                sys.executable,
                str(ROOT / "manage.py"),
                "serve",
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
            ],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=ROOT,
        )
    try:
        _wait_until_up(f"{base}/accounts/login/", proc, log)
        yield base
    finally:
        stop(proc)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Chromium for one test module.

    Playwright's sync API runs an event loop in this thread while it is open, and the ORM
    calls the browser tests make between browser steps are plain synchronous code; so the
    async-safety switch is on exactly while Playwright runs, and Playwright stops at the
    end of the module: the tests collected after it keep Django's check.
    """
    from playwright.sync_api import sync_playwright

    if not Path(CHROMIUM).exists():
        pytest.skip("Debian's Chromium is not installed at /usr/bin/chromium")
    with pytest.MonkeyPatch.context() as patch, sync_playwright() as playwright:
        patch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
        chromium = playwright.chromium.launch(
            executable_path=CHROMIUM,
            args=["--no-sandbox", "--disable-gpu", "--disable-background-networking"],
        )
        yield chromium
        chromium.close()


# Reports every Content-Security-Policy violation of a page (and its frames) to the test,
# before any of the page's own scripts run, with what was blocked and where.
_REPORT_CSP = """
document.addEventListener("securitypolicyviolation", (event) => {
  window.__bwCspViolation(
    `${event.violatedDirective} blocked ${event.blockedURI || "inline"} at ` +
    `${event.sourceFile || event.documentURI}:${event.lineNumber} (${event.sample || ""})`
  );
}, true);
"""
# How Chromium reports an HTTP error status of a request in the console.
_HTTP_ERROR = re.compile(r"^Failed to load resource: the server responded with a status of (\d+)")
_ANSWERS = frozenset({409, 410, 422})
"""Statuses the pages show as answers, not errors (`responseHandling` in base.html)."""


class Session:
    """A logged-in browser context for one user. Records, for every page it opens, the
    dialogs, script errors, console errors and CSP violations; the fixtures fail the test
    if any error or violation occurred that the test did not declare (`expect_errors`).

    A response the page shows as an answer (409, 410, 422, and a 403 the server marks as
    a review-policy refusal) is not an error, though Chromium logs its status."""

    def __init__(self, browser: Any, base: str, user: User) -> None:
        client = Client()
        client.force_login(user)
        self.base = base
        self.user = user.get_username()
        self.context = browser.new_context(viewport=DESKTOP)
        self.context.add_cookies(
            [{"name": "sessionid", "value": client.cookies["sessionid"].value, "url": base}]
        )
        self.dialogs: list[str] = []
        self.errors: list[str] = []
        self.requests: list[str] = []
        self.csp_violations: list[str] = []
        self._console_errors: list[tuple[str, str]] = []
        self.console: list[str] = []
        self._answers: set[str] = set()
        self._expected: list[str] = []
        self.context.expose_binding(
            "__bwCspViolation", lambda source, text: self.csp_violations.append(text)
        )
        self.context.add_init_script(script=_REPORT_CSP)
        self.context.on("console", self._console)
        self.context.on("dialog", self._dialog)
        self.context.on("weberror", lambda error: self.errors.append(str(error.error)))
        self.context.on("response", self._response)
        self.page = self.context.new_page()
        self.page.on("request", lambda request: self.requests.append(request.url))

    def _console(self, message: Any) -> None:
        self.console.append(f"[{message.type}] {message.text} ({message.location.get('url', '')})")
        if message.type == "error":
            self._console_errors.append((message.text, message.location.get("url", "")))

    def _response(self, response: Any) -> None:
        refusal = response.status == 403 and response.headers.get("x-beamweaver-refusal")
        if response.status in _ANSWERS or refusal:
            self._answers.add(response.url)

    def _dialog(self, dialog: Any) -> None:
        self.dialogs.append(dialog.message)
        dialog.dismiss()

    def expect_errors(self, *fragments: str) -> None:
        """Declare console errors this test provokes on purpose (each containing one of
        `fragments`): they do not fail it."""
        self._expected.extend(fragments)

    @property
    def console_errors(self) -> list[str]:
        """Console errors, except the logged statuses of answers and declared ones."""
        return [
            f"{text} ({url})"
            for text, url in self._console_errors
            if not (_HTTP_ERROR.match(text) and url in self._answers)
            and not any(fragment in text for fragment in self._expected)
        ]

    def open(self, path: str) -> Any:
        self.page.goto(self.base + path)
        return self.page

    def wait_live(self) -> None:
        """Wait until the page's websocket is open and its first message (the server's
        resync of the live parts) has been swapped in: a page measured or clicked before
        that could have its parts replaced under the test (CI: a row's box read as None)."""
        self.page.wait_for_selector('#live-status[data-state="open"][data-synced]', timeout=10_000)

    def problems(self) -> dict[str, list[str]]:
        """What went wrong in the browser: script errors, console errors, CSP violations
        (those declared with `expect_errors` excepted)."""
        found = {
            "page errors": self.errors,
            "console errors": self.console_errors,
            "CSP violations": [
                text
                for text in self.csp_violations
                if not any(fragment in text for fragment in self._expected)
            ],
        }
        return {kind: list(items) for kind, items in found.items() if items}

    def close(self) -> None:
        self.context.close()


def save_artefacts(sessions: list[Session], directory: Path) -> list[Path]:
    """Keep what each session's page shows: full-page screenshots at the desktop and the
    phone width, and its console log (with the problems found); returns the files."""
    directory.mkdir(parents=True, exist_ok=True)
    saved = []
    for index, session in enumerate(sessions):
        stem = directory / f"{index}-{re.sub(r'[^A-Za-z0-9_.-]', '_', session.user)}"
        page = session.page
        try:
            for name, size in (("desktop", DESKTOP), ("phone", PHONE)):
                page.set_viewport_size(size)
                path = stem.with_name(f"{stem.name}-{name}.png")
                page.screenshot(path=str(path), full_page=True)
                saved.append(path)
            page.set_viewport_size(DESKTOP)
        except Exception as exc:  # a crashed page still leaves its console log
            session.console.append(f"[artefacts] no screenshot: {exc}")
        log = stem.with_name(f"{stem.name}-console.log")
        lines = [f"url: {page.url}", *session.console, "", json.dumps(session.problems(), indent=2)]
        log.write_text("\n".join(lines) + "\n")
        saved.append(log)
    return saved


def artefact_directory(nodeid: str) -> Path:
    """Where the artefacts of the test `nodeid` go."""
    return ARTEFACTS / re.sub(r"[^A-Za-z0-9_.-]+", "_", nodeid).strip("_")[:150]


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: Any) -> Any:
    """Record on the test whether its call failed (the `sessions` fixture reads it)."""
    report = yield
    if report.when == "call":
        item.stash[_CALL_FAILED] = report.failed
    return report


_CALL_FAILED = pytest.StashKey[bool]()


def close_checked(sessions: list[Session]) -> None:
    """Close the sessions; fail if any of them saw an error or a CSP violation."""
    problems = {}
    for session in sessions:
        session.page.wait_for_timeout(200)  # what the last step started reports itself
        if session.problems():
            problems[session.user] = session.problems()
        session.close()
    assert not problems, f"The browser reported problems: {json.dumps(problems, indent=2)}"


@pytest.fixture
def sessions(request: pytest.FixtureRequest, browser: Any, daphne_server: str) -> Iterator[Any]:
    """Opens logged-in browser sessions (`sessions(user)`); at the end of the test, fails
    it if any page of theirs logged an error or violated the CSP, and keeps their
    screenshots and console logs (`save_artefacts`) if it failed or they did."""
    opened: list[Session] = []

    def open_session(user: User) -> Session:
        session = Session(browser, daphne_server, user)
        opened.append(session)
        return session

    yield open_session
    failed = request.node.stash.get(_CALL_FAILED, False)
    if opened and (failed or any(session.problems() for session in opened)):
        save_artefacts(opened, artefact_directory(request.node.nodeid))
    close_checked(opened)
