"""The README's run command, `manage.py demo`, as a real process.

With `DATABASE_URL` (here: the test database) it migrates, queues the demo requests, runs
them on in-process workers with the scripted model until each pauses for review, and
serves the inbox. With no `DATABASE_URL` it starts an embedded PostgreSQL under the var
directory and serves from it. On such a fresh state a newcomer logs in with the printed
credentials and completes review loops over plain HTTP, as a browser without JavaScript
would.
"""

from __future__ import annotations

import html
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.cookiejar import CookieJar
from pathlib import Path
from typing import Any

import pytest
from langgraph_sdk import get_sync_client

from beamweaver_core.embedded_postgres import stop_server
from beamweaver_core.models import Run
from tests.support.processes import ROOT, database_url_for_children

pytestmark = pytest.mark.processes

# No key: the demo agent must run offline on its scripted model.
_KEYS = (
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "BEAMWEAVER_GRAPHS",
    "REDIS_URL",
    "BEAMWEAVER_BASE_URL",
)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def demo(env: dict[str, str], log: Path, *args: str, timeout: float = 180) -> Iterator[str]:
    """Run `manage.py demo`; yield its URL once it prints that it is running."""
    port = free_port()
    with log.open("w") as out:
        proc = subprocess.Popen(
            [sys.executable, str(ROOT / "manage.py"), "demo", "--port", str(port), *args],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            text=True,
        )
    try:
        deadline = time.monotonic() + timeout
        while "BeamWeaver is running" not in log.read_text():
            if proc.poll() is not None:
                raise AssertionError(f"demo exited ({proc.returncode}):\n{log.read_text()}")
            if time.monotonic() > deadline:
                raise AssertionError(f"demo did not start in {timeout}s:\n{log.read_text()}")
            time.sleep(0.2)
        yield f"http://127.0.0.1:{port}/"
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def base_env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _KEYS}
    env.update(
        DJANGO_SETTINGS_MODULE="beamweaver_core.settings",
        PYTHONPATH=str(ROOT),
        BEAMWEAVER_VAR_DIR=str(tmp_path / "var"),
    )
    return env


def get(url: str) -> tuple[int, str]:
    with urllib.request.urlopen(url, timeout=10) as response:  # follows the login redirect
        return response.status, response.read().decode()


@pytest.mark.django_db(transaction=True)
def test_demo_serves_the_inbox_and_its_requests_wait_for_review(tmp_path: Path) -> None:
    env = {**base_env(tmp_path), "DATABASE_URL": database_url_for_children()}
    log = tmp_path / "demo.log"

    with demo(env, log) as url:
        status, page = get(url)
        assert status == 200 and "password" in page.lower()
        # The printed /lg URL and token work with the official client as printed.
        printed = re.search(
            r"LangGraph API: (\S+)/lg  \(API token of reviewer: (bw_\S+)\)", log.read_text()
        )
        assert printed is not None, log.read_text()
        lg = get_sync_client(url=f"{printed.group(1)}/lg", api_key=printed.group(2))
        assert "ops_assistant" in [a["graph_id"] for a in lg.assistants.search(limit=100)]
        assert f'get_client(url="{url}lg", api_key="{printed.group(2)}")' in log.read_text()
        deadline = time.monotonic() + 120
        while (
            Run.objects.filter(graph="ops_assistant", status="interrupted").count() < 3
            or not Run.objects.filter(graph="it_assistant", status="interrupted").exists()
        ):
            assert time.monotonic() < deadline, (
                list(Run.objects.values_list("graph", "status", "error")),
                log.read_text(),
            )
            time.sleep(0.3)
        # The review API's deep links point at the port the demo serves on (they used
        # to name the default http://localhost:8000 whatever --port said).
        request = urllib.request.Request(
            f"{url}api/v1/items/", headers={"Authorization": f"Bearer {printed.group(2)}"}
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            items = json.loads(response.read())["items"]
        assert items and all(i["url"].startswith(f"{url}items/") for i in items), items

    output = log.read_text()
    assert "Queued 3 demo requests" in output
    assert "Queued a request to it_assistant (MCP and LangChain tools)." in output
    # The second agent's calls, from a stdio MCP server, an HTTP MCP server and a LangChain
    # tool, all wait for review in one pause, as its interrupt_on says.
    (paused,) = Run.objects.filter(graph="it_assistant", status="interrupted")
    (pending,) = paused.result["interrupts"]
    assert [a["name"] for a in pending["value"]["action_requests"]] == [
        "files_delete_file",
        "tickets_close_ticket",
        "restart_service",
    ]
    assert [c["allowed_decisions"] for c in pending["value"]["review_configs"]] == [
        ["approve", "edit", "reject", "respond"],
        ["approve", "edit", "reject"],
        ["approve", "reject"],
    ]
    assert re.search(r"Password:\s+\S{8,}", output)
    assert not Run.objects.filter(status="failed").exists()


def embedded_env(tmp_path: Path) -> tuple[dict[str, str], Path]:
    """A fresh state: no `DATABASE_URL`, an empty var directory and PGDATA."""
    env = base_env(tmp_path)
    env.pop("DATABASE_URL", None)
    pgdata = tmp_path / "pgdata"
    env["BEAMWEAVER_PGDATA"] = str(pgdata)
    return env, pgdata


def test_without_database_url_the_demo_starts_an_embedded_postgres(tmp_path: Path) -> None:
    env, pgdata = embedded_env(tmp_path)
    log = tmp_path / "demo.log"
    try:
        with demo(env, log, "--no-seed") as url:
            status, page = get(url)
            assert status == 200 and "password" in page.lower()
        assert (pgdata / "PG_VERSION").exists()
    finally:
        stop_server(pgdata)


class Browser:
    """A cookie-keeping HTTP client that logs in and posts forms with their CSRF token."""

    def __init__(self, base: str) -> None:
        self.base = base.rstrip("/")
        jar = urllib.request.HTTPCookieProcessor(CookieJar())
        self.opener = urllib.request.build_opener(jar)

    def _open(self, request: urllib.request.Request) -> tuple[int, str, str]:
        try:
            with self.opener.open(request, timeout=20) as response:
                return response.status, response.url, response.read().decode()
        except urllib.error.HTTPError as error:
            return error.code, error.url, error.read().decode()

    def get(self, path: str) -> str:
        return self._open(urllib.request.Request(self.base + path))[2]

    def post(self, path: str, form_page: str, data: dict[str, str]) -> tuple[int, str, str]:
        """POST `data` with the CSRF token of the page holding the form; redirects followed."""
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', form_page)
        assert token, "the page has no CSRF token"
        body = urllib.parse.urlencode({"csrfmiddlewaretoken": token.group(1), **data}).encode()
        headers = {"Referer": self.base + path}
        return self._open(urllib.request.Request(self.base + path, data=body, headers=headers))

    def log_in(self, username: str, password: str) -> None:
        page = self.get("/accounts/login/")
        status, url, _ = self.post(
            "/accounts/login/?next=/", page, {"username": username, "password": password}
        )
        assert (status, url) == (200, self.base + "/"), f"{username} could not log in"

    def pending(self) -> list[str]:
        return re.findall(r'<li id="item-row-(\d+)"', self.get("/"))

    def approve(self, item: str) -> tuple[int, str]:
        """Approve every action of the item."""
        page = self.get(f"/items/{item}/")
        hidden = dict(
            re.findall(r'type="hidden" name="(\w+)"(?: id="[^"]*")? value="([^"]*)"', page)
        )
        data = {name: html.unescape(hidden[name]) for name in ("interrupt_id", "digest")}
        data.update(client_decision_id=hidden["client_decision_id"])
        data.update(
            {f"{field}-type": "approve" for field in set(re.findall(r'name="(d\d+)-type"', page))}
        )
        status, _, answer = self.post(f"/items/{item}/decide/", page, data)
        return status, answer


def until(condition: Callable[[], Any], what: str, timeout: float = 60) -> Any:
    deadline = time.monotonic() + timeout
    while not (value := condition()):
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.3)
    return value


def completed_page(browser: Browser, path: str) -> str:
    """The page at `path` once it shows its run completed."""
    return str(
        until(lambda: 'data-status="completed"' in (page := browser.get(path)) and page, path)
    )


def test_a_newcomer_logs_in_with_the_printed_credentials_and_completes_review_loops(
    tmp_path: Path,
) -> None:
    env, pgdata = embedded_env(tmp_path)
    log = tmp_path / "demo.log"
    try:
        with demo(env, log) as url:
            output = log.read_text()
            first = re.search(r"Username:  reviewer\n  Password:  (\S+)", output)
            second = re.search(r"Second reviewer: reviewer2 / (\S+)", output)
            assert first and second, output
            reviewer = Browser(url)
            reviewer.log_in("reviewer", first.group(1))

            # The seeded requests wait for review; the reviewer approves two: one of the
            # operations assistant and the IT assistant's (MCP and LangChain tools).
            seeded = until(lambda: len(reviewer.pending()) == 4 and reviewer.pending(), "seeds")
            assert "<title>(4) Inbox · BeamWeaver</title>" in reviewer.get("/")
            pages = {item: reviewer.get(f"/items/{item}/") for item in seeded}
            it_item = next(i for i, page in pages.items() if "files_delete_file" in page)
            ops_item = next(i for i in seeded if i != it_item)
            for item in (ops_item, it_item):
                found = re.search(r'href="(/threads/[0-9a-f]+/)"', pages[item])
                assert found and reviewer.approve(item)[0] == 200
                done = completed_page(reviewer, found.group(1))
            assert "files_delete_file: Deleted /logs/debug-old.log." in html.unescape(done)
            assert "restart_service: Restarted web" in done

            # A run the reviewer starts pauses in the inbox; they may not approve it, the
            # second reviewer does, and the run completes.
            message = {"graph": "ops_assistant", "message": "Refund order 1236 $300"}
            status, started, _ = reviewer.post("/runs/new/", reviewer.get("/runs/new/"), message)
            assert status == 200 and "/threads/" in started
            path = urllib.parse.urlsplit(started).path
            found = until(lambda: re.search(r'href="/items/(\d+)/"', reviewer.get(path)), "a pause")
            item = found.group(1)
            assert item in reviewer.pending()
            status, answer = reviewer.approve(item)
            assert status == 403 and "You started this run, so you cannot approve it" in answer
            other = Browser(url)
            other.log_in("reviewer2", second.group(1))
            assert other.approve(item)[0] == 200
            done = until(
                lambda: 'data-status="completed"' in (page := other.get(path)) and page, "the run"
            )
            assert "Refunded $300.00 on order 1236" in done
            assert item not in reviewer.pending()

            # A deletion's review says who asked for it: the run's context names the
            # reviewer who started it (the seeded one was queued by the demo itself).
            message = {
                "graph": "ops_assistant",
                "message": "Delete closed records older than 30 days",
            }
            status, started, _ = reviewer.post("/runs/new/", reviewer.get("/runs/new/"), message)
            path = urllib.parse.urlsplit(started).path
            found = until(lambda: re.search(r'href="/items/(\d+)/"', reviewer.get(path)), "a pause")
            assert "Requested by: reviewer" in other.get(f"/items/{found.group(1)}/")
            assert any(
                "Requested by: manage.py demo" in reviewer.get(f"/items/{seed}/") for seed in seeded
            )
    finally:
        stop_server(pgdata)


def test_the_example_mcp_server_starts_with_a_token_that_looks_like_an_option() -> None:
    """CI's find: `secrets.token_urlsafe` gave a token starting with "-", and the demo
    died with "argument --token: expected one argument". The demo's command line for the
    server, with such a token, starts it and it serves."""
    from beamweaver_core.management.commands.demo import _free_port, _listening, tickets_server_argv

    port = _free_port()
    process = subprocess.Popen(
        tickets_server_argv(port, "-looks-like-an-option"),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        assert _listening(port, process, timeout=120), process.stderr and process.stderr.read()
    finally:
        process.kill()
        process.wait(10)
