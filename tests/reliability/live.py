"""The product's own server (`manage.py serve`, daphne) in a child process on the test
database, for tests that need real sockets: origins, frames, revocation, browsers.

Like the browser tests' server, it runs the in-process workers on the in-memory channel
layer, so a run started by the test is executed, paused and pushed by the server itself.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from bench.hostile.agents import GRAPHS
from tests.browser.conftest import _free_port, _wait_until_up
from tests.reviews.graphs import REVIEW_GRAPHS
from tests.support.processes import ROOT, child_env, stop


class LiveServer:
    """The project's daphne on one loopback port, which it keeps across restarts (so
    clients holding its URL reconnect to the new process)."""

    def __init__(self, log_dir: Path, port: int | None = None, **env: str) -> None:
        defaults = {
            "BEAMWEAVER_GRAPHS": json.dumps({**REVIEW_GRAPHS, **GRAPHS}),
            "BEAMWEAVER_WORKER_MODE": "inline",
            "BEAMWEAVER_POLL_SECONDS": "0.2",
            "BEAMWEAVER_LOG_LEVEL": "WARNING",
            "DEBUG": "0",
        }
        self.environment = child_env(**{**defaults, **env})
        if "REDIS_URL" not in env:
            self.environment.pop("REDIS_URL", None)
        self.port = port or _free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.log_dir = log_dir
        self.proc: subprocess.Popen[bytes] | None = None
        self.starts = 0

    def start(self) -> None:
        """Start the server (again) and wait until it answers."""
        self.starts += 1
        log = self.log_dir / f"daphne-{self.port}-{self.starts}.log"
        with log.open("w") as out:
            self.proc = subprocess.Popen(
                [sys.executable, str(ROOT / "manage.py"), "serve", "--port", str(self.port)],
                env=self.environment,
                stdout=out,
                stderr=subprocess.STDOUT,
                cwd=ROOT,
            )
        _wait_until_up(f"{self.base}/accounts/login/", self.proc, log)

    def kill(self, signum: int) -> None:
        """Send the server `signum` and wait for it to exit."""
        assert self.proc is not None
        self.proc.send_signal(signum)
        self.proc.wait(30)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            stop(self.proc)


@contextmanager
def live_server(log_dir: Path, **env: str) -> Iterator[str]:
    """Serve the project on a free loopback port; yields the base URL. Without a
    `REDIS_URL` in `env` it runs on the in-memory channel layer (one process)."""
    server = LiveServer(log_dir, **env)
    try:
        server.start()
        yield server.base
    finally:
        server.stop()
