"""LangGraph's own server, `langgraph dev` (`langgraph-cli[inmem]`: in-memory runtime, no
auth), in a child process on a free loopback port, serving the LangGraph equivalents of
the protocol tests' graphs (tests/protocol/differential/langgraph/). The differential
suite and the protocol benchmark run the same SDK calls against it and against BeamWeaver.

It runs in a copy of the graphs' directory: the dev server writes its persistence files
(`.langgraph_api/`) next to its `langgraph.json`.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from bench.env import ROOT
from bench.live.server import guarded

GRAPHS_DIR = ROOT / "tests" / "protocol" / "differential" / "langgraph"
START_TIMEOUT = 120.0  # ~16 s on an idle two-core machine


def cli() -> Path | None:
    """The `langgraph` command of this interpreter's environment, if installed."""
    path = Path(sys.executable).with_name("langgraph")
    return path if path.exists() else None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def langgraph_dev(work_dir: Path, **env: str) -> Iterator[str]:
    """Serve the equivalent graphs with `langgraph dev`; yields its base URL. `env` adds
    to the server's environment (e.g. `BEAMWEAVER_TEST_STEP_SECONDS`)."""
    command = cli()
    if command is None:
        raise RuntimeError("langgraph-cli is not installed: pip install -e '.[dev]'")
    app = work_dir / "langgraph-app"
    shutil.copytree(GRAPHS_DIR, app, ignore=shutil.ignore_patterns("__pycache__"))
    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    log = work_dir / f"langgraph-dev-{port}.log"
    environment = {
        **{k: v for k, v in os.environ.items() if not k.startswith("LANGSMITH")},
        "LANGGRAPH_CLI_NO_ANALYTICS": "1",
        "LANGSMITH_TRACING": "false",
        **env,
    }
    with log.open("w") as out:
        proc = subprocess.Popen(
            guarded(
                [
                    str(command),
                    "dev",
                    "--no-browser",
                    "--no-reload",
                    "--allow-blocking",
                    "--port",
                    str(port),
                    "--config",
                    str(app / "langgraph.json"),
                    "--server-log-level",
                    "WARNING",
                ]
            ),
            cwd=app,
            env=environment,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        _wait_until_up(f"{base}/ok", proc, log)
        yield base
    finally:
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)


def _wait_until_up(url: str, proc: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"langgraph dev exited ({proc.returncode}):\n{log.read_text()}")
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.25)
    raise RuntimeError(f"langgraph dev did not start within {START_TIMEOUT}s:\n{log.read_text()}")
