"""`manage.py demo`: everything on one machine, ready to review.

Runs the migrations (on the embedded Postgres unless `DATABASE_URL` is set), creates a
demo reviewer and a second one, queues a few demo requests to the `ops_assistant` agent so
reviews are already waiting, and serves the inbox with in-process workers.

With the `mcp` and `langchain` extras installed it also registers a second agent,
`it_assistant`, whose tools come from the example MCP servers shipped in
`demo/mcp_servers` (one over stdio, one over streamable HTTP, started here on a free
loopback port) and from a LangChain tool, and queues a request to it.

Nobody may approve a run they started themselves (`docs/review-operations.md`), so a run
the demo reviewer starts from "Start a run" is approved by the second reviewer (in another
browser or a private window); the seeded requests have no requester, so either approves
them.
"""

from __future__ import annotations

import importlib.util
import json
import os
import secrets
import socket
import subprocess
import sys
import time
from typing import Any

from django.conf import settings
from django.contrib.auth.models import Permission, User
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError, CommandParser

from beamweaver_core.conf import conf
from beamweaver_core.demo.mcp_servers import FILES_SERVER, TICKETS_SERVER
from beamweaver_core.models import Thread
from beamweaver_core.runtime import service
from beamweaver_core.runtime.access import access
from beamweaver_core.runtime.worker import process_worker, stop_process_worker
from beamweaver_core.webserver import serve

DEMO_REQUESTS = (
    "Refund order 1234 $250, the parcel arrived broken.",
    "Delete closed records older than 30 days.",
    "Email the admin that the nightly export failed.",
)
IT_GRAPH = "it_assistant"
IT_REQUEST = (
    "Delete /logs/debug-old.log, close ticket T-101 as resolved and restart the web service."
)


class Command(BaseCommand):
    help = (
        "Start the live review inbox with the demo agent: migrate, create a demo reviewer "
        "and a second one (credentials printed), queue demo requests that pause for review, "
        "and serve on http://127.0.0.1:8000/ with in-process workers. With the mcp and "
        "langchain extras, a second agent (it_assistant) uses tools from two example MCP "
        "servers (stdio and HTTP) and a LangChain tool. Stop with Ctrl-C."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--host", default="127.0.0.1", help="Address to listen on (default 127.0.0.1)."
        )
        parser.add_argument("--port", type=int, default=8000, help="Port (default 8000).")
        parser.add_argument(
            "--username", default="reviewer", help="Demo reviewer's username (default reviewer)."
        )
        parser.add_argument(
            "--no-seed", action="store_true", help="Do not queue the demo requests."
        )

    def handle(
        self, *args: Any, host: str, port: int, username: str, no_seed: bool, **options: Any
    ) -> None:
        if not 0 < port < 65536:
            raise CommandError(f"--port must be between 1 and 65535, got {port}.")
        url = f"http://{host}:{port}/"
        if not os.environ.get("BEAMWEAVER_BASE_URL"):
            # Deep links (the review API's items, notifications) point at this server,
            # whatever --port says, unless the user chose where they point.
            settings.BEAMWEAVER["BASE_URL"] = url.rstrip("/")
        self.stdout.write("Preparing the database (embedded Postgres unless DATABASE_URL is set)…")
        call_command("migrate", interactive=False, verbosity=0)
        password = self._reviewer(username, admin=True)
        token = self._api_token(username)
        second = f"{username}2"
        second_password = self._reviewer(second, admin=False)
        tickets = self._it_assistant()
        process_worker()
        if not no_seed and not Thread.objects.filter(graph="ops_assistant").exists():
            for text in DEMO_REQUESTS:
                service.start_run(
                    "ops_assistant",
                    {"messages": [{"role": "user", "content": text}]},
                    context={"source": "manage.py demo"},
                )
            self.stdout.write(
                f"Queued {len(DEMO_REQUESTS)} demo requests; they will wait for your review."
            )
        if tickets and not no_seed and not Thread.objects.filter(graph=IT_GRAPH).exists():
            service.start_run(IT_GRAPH, {"messages": [{"role": "user", "content": IT_REQUEST}]})
            self.stdout.write(f"Queued a request to {IT_GRAPH} (MCP and LangChain tools).")

        def ready() -> None:
            self.stdout.write(
                "\nBeamWeaver is running.\n"
                f"  Open:      {url}\n"
                f"  Username:  {username}\n"
                f"  Password:  {password}\n"
                "  Admin:     the same account at /admin/\n"
                f"  Second reviewer: {second} / {second_password}\n"
                f"  LangGraph API: {url}lg  (API token of {username}: {token})\n"
                f'    get_client(url="{url}lg", api_key="{token}")\n'
                "Type a request under 'Start a run' and watch it pause in the inbox. Nobody\n"
                f"approves their own run: approve it as {second} (another browser or a private\n"
                "window). The seeded requests either of you can approve. Ctrl-C stops.\n"
            )

        try:
            serve(host, port, ready=ready)
        finally:
            stop_process_worker()
            if tickets is not None:
                tickets.terminate()
                tickets.wait(10)

    def _it_assistant(self) -> subprocess.Popen[bytes] | None:
        """Register `it_assistant` and its MCP servers for this process, after starting
        the HTTP example server; the process of that server, or None without the extras."""
        missing = [m for m in ("mcp", "langchain_core") if importlib.util.find_spec(m) is None]
        if missing:
            self.stdout.write(
                f"Skipping the {IT_GRAPH} demo ({', '.join(missing)} not installed): "
                "pip install 'beamweaver[mcp,langchain]'."
            )
            return None
        port, token = _free_port(), secrets.token_urlsafe(16)
        process = subprocess.Popen(tickets_server_argv(port, token), stdout=subprocess.DEVNULL)
        if not _listening(port, process, timeout=120):
            process.kill()
            raise CommandError(f"The example MCP server {TICKETS_SERVER.name} did not start.")
        # Declared for this process only: its in-process workers run the demo's runs.
        settings.BEAMWEAVER["MCP_SERVERS"] = {
            **(conf.mcp_servers or {}),
            "demo_files": {
                "command": sys.executable,
                "args": [str(FILES_SERVER)],
                "prefix": "files_",
            },
            "demo_tickets": {
                "url": f"http://127.0.0.1:{port}/mcp",
                "headers": {"Authorization": f"Bearer {token}"},
                "prefix": "tickets_",
            },
        }
        settings.BEAMWEAVER["GRAPHS"] = {
            **(conf.graphs or {}),
            IT_GRAPH: "beamweaver_core.demo.it_agent:ITAssistant",
        }
        return process

    def _api_token(self, username: str) -> str:
        """An API token of the demo reviewer for /lg: the one kept in var/ while it is
        still live, else a new one (its secret is shown once, so it is kept there)."""
        path = settings.VAR_DIR / "demo_reviewer.json"
        stored = json.loads(path.read_text()) if path.exists() else {}
        key = f"{username}:api_token"
        token = stored.get(key)
        if not token or access().authenticate(token) is None:
            token = access().issue_token(User.objects.get(username=username), "manage.py demo")
            path.write_text(json.dumps({**stored, key: token}))
            path.chmod(0o600)
        return str(token)

    def _reviewer(self, username: str, *, admin: bool) -> str:
        """A demo reviewer's password: generated once and kept in var/ (not in code).

        The first reviewer is also the admin; the second only reviews."""
        path = settings.VAR_DIR / "demo_reviewer.json"
        stored = json.loads(path.read_text()) if path.exists() else {}
        password = stored.get(username) or secrets.token_urlsafe(9)
        user, _ = User.objects.get_or_create(
            username=username, defaults={"email": f"{username}@example.com"}
        )
        user.is_staff = admin
        user.is_superuser = admin
        user.set_password(password)
        user.save()
        review = Permission.objects.filter(
            content_type__app_label="reviews", codename="review"
        ).first()
        if review is not None:
            user.user_permissions.add(review)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({**stored, username: password}))
        path.chmod(0o600)
        return password


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def tickets_server_argv(port: int, token: str) -> list[str]:
    """The example MCP server's command line. `--token=...` as one argument: a random
    token may start with "-", which argparse takes for an option after a separate
    `--token` (the demo then failed to start about once in 64)."""
    return [sys.executable, str(TICKETS_SERVER), "--port", str(port), f"--token={token}"]


def _listening(port: int, process: subprocess.Popen[bytes], *, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and process.poll() is None:
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return True
        time.sleep(0.1)
    return False
