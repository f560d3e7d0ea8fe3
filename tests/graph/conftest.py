from __future__ import annotations

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
