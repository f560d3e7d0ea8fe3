"""The differential suite's servers: LangGraph's own (`langgraph dev`, one per module, it
takes ~16 s to start) beside the protocol tests' module-scoped BeamWeaver `lg_url`, each
with the module's `SERVER_ENV`, and the SDK clients of both."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from langgraph_sdk import get_sync_client

from bench.live.langgraph_dev import cli, langgraph_dev


@pytest.fixture(scope="module")
def langgraph_url(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    if cli() is None:
        pytest.fail("langgraph-cli[inmem] is a dev dependency: pip install -e '.[dev]'")
    env = getattr(request.module, "SERVER_ENV", {})
    with langgraph_dev(tmp_path_factory.mktemp("langgraph-dev"), **env) as base:
        yield base


@pytest.fixture
def both(lg_url: str, langgraph_url: str, alice_token: str) -> dict[str, Any]:
    """The two servers' clients: "ours" as alice, "theirs" (no auth on `langgraph dev`)."""
    return {
        "ours": get_sync_client(url=lg_url, api_key=alice_token),
        "theirs": get_sync_client(url=langgraph_url, api_key="unused"),
    }
