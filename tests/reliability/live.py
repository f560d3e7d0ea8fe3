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


@contextmanager
def live_server(log_dir: Path, **env: str) -> Iterator[str]:
    """Serve the project on a free loopback port; yields the base URL. Without a
    `REDIS_URL` in `env` it runs on the in-memory channel layer (one process)."""
    defaults = {
        "BEAMWEAVER_GRAPHS": json.dumps({**REVIEW_GRAPHS, **GRAPHS}),
        "BEAMWEAVER_WORKER_MODE": "inline",
        "BEAMWEAVER_POLL_SECONDS": "0.2",
        "BEAMWEAVER_LOG_LEVEL": "WARNING",
        "DEBUG": "0",
    }
    environment = child_env(**{**defaults, **env})
    if "REDIS_URL" not in env:
        environment.pop("REDIS_URL", None)
    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    log = log_dir / f"daphne-{port}.log"
    with log.open("w") as out:
        proc = subprocess.Popen(
            [sys.executable, str(ROOT / "manage.py"), "serve", "--port", str(port)],
            env=environment,
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=ROOT,
        )
    try:
        _wait_until_up(f"{base}/accounts/login/", proc, log)
        yield base
    finally:
        stop(proc)
