"""MemoryCheckpointer against the shared checkpointer contract."""

from __future__ import annotations

import pytest

from beamweaver_core.checkpoint import MemoryCheckpointer
from tests.contract.checkpointer_contract import CheckpointerContract


class TestMemoryCheckpointer(CheckpointerContract):
    @pytest.fixture
    def checkpointer(self) -> MemoryCheckpointer:
        return MemoryCheckpointer()
