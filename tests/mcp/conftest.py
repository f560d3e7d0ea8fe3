"""Fixtures of the MCP tests: the test server (`server.py`, the official SDK) started for
real, as a stdio subprocess of the client or as a streamable HTTP server on 127.0.0.1."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from beamweaver_core.agent.mcp_tools import MCPServerHTTP, MCPServerStdio

SERVER = Path(__file__).resolve().parent / "server.py"
# Starting a Python MCP server takes seconds on a loaded machine; calls are quick.
CONNECT_TIMEOUT = 120.0


class CallLog:
    """The calls the test server received (`$MCP_TEST_CALLS`, one JSON line each)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def calls(self, tool: str | None = None) -> list[dict[str, Any]]:
        if not self.path.exists():
            return []
        lines = [json.loads(line) for line in self.path.read_text().splitlines() if line]
        return [c for c in lines if tool is None or c["tool"] == tool]


@pytest.fixture
def call_log(tmp_path: Path) -> CallLog:
    return CallLog(tmp_path / "calls.jsonl")


def stdio_server(log: CallLog, **options: Any) -> MCPServerStdio:
    options.setdefault("connect_timeout", CONNECT_TIMEOUT)
    options.setdefault("name", "local")
    return MCPServerStdio(
        sys.executable, [str(SERVER)], env={"MCP_TEST_CALLS": str(log.path)}, **options
    )


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_http_server(log: CallLog, **env: str) -> tuple[subprocess.Popen[bytes], str]:
    """Start `server.py --http` and wait until it accepts connections."""
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, str(SERVER), "--http", str(port)],
        env={"PATH": "/usr/bin:/bin", "MCP_TEST_CALLS": str(log.path), **env},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + CONNECT_TIMEOUT
    while True:
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return proc, f"http://127.0.0.1:{port}/mcp"
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise AssertionError(f"the MCP test server did not start (exit {proc.returncode})")
        time.sleep(0.1)


@pytest.fixture
def http_server(call_log: CallLog) -> Iterator[Callable[..., tuple[subprocess.Popen[bytes], str]]]:
    """Start HTTP test servers (`start(**env)` -> (process, url)); stopped after the test."""
    started: list[subprocess.Popen[bytes]] = []

    def start(**env: str) -> tuple[subprocess.Popen[bytes], str]:
        proc, url = start_http_server(call_log, **env)
        started.append(proc)
        return proc, url

    yield start
    for proc in started:
        proc.kill()
        proc.wait(10)


def http_toolset(url: str, **options: Any) -> MCPServerHTTP:
    options.setdefault("connect_timeout", CONNECT_TIMEOUT)
    return MCPServerHTTP(url, **options)
