"""Checkpointers: where paused and finished threads keep their state (api.md §1)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from beamweaver_core.checkpoint.base import Checkpointer
from beamweaver_core.checkpoint.memory import MemoryCheckpointer

if TYPE_CHECKING:
    from beamweaver_core.checkpoint.postgres import PostgresCheckpointer


def __getattr__(name: str) -> Any:
    # PostgresCheckpointer needs configured Django; import it only when asked for.
    if name == "PostgresCheckpointer":
        from beamweaver_core.checkpoint.postgres import PostgresCheckpointer

        return PostgresCheckpointer
    raise AttributeError(name)


__all__ = ["Checkpointer", "MemoryCheckpointer", "PostgresCheckpointer"]
