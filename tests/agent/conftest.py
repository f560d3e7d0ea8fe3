"""Fixtures of the agent tests: a checkpointer, a fresh thread, and no network."""

from __future__ import annotations

import socket
import uuid
from typing import Any

import pytest

from beamweaver_core.checkpoint import MemoryCheckpointer


@pytest.fixture
def checkpointer() -> MemoryCheckpointer:
    return MemoryCheckpointer()


@pytest.fixture
def config() -> dict[str, Any]:
    return {"configurable": {"thread_id": f"thread-{uuid.uuid4().hex[:8]}"}}


@pytest.fixture(autouse=True)
def no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    """Agent tests run on scripted models: any connection attempt is a bug."""

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError(f"agent tests must not touch the network: {args!r}")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)
