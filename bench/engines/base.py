"""What a workload needs from an engine, written once so both engines run the same code.

A workload builds its graph with the engine's own builder (BeamWeaver's `Graph` and
LangGraph's `StateGraph` take the same `add_node` / `add_edge` / `compile` calls), runs it
through `invoke` / `resume` (which return an `Outcome`), and gets its checkpointer from a
`Store`, which also knows how to forget the warm-up rows and what the server counted.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any

Config = dict[str, Any] | None


class Pending(Exception):
    """The workload cannot be measured here yet; the message says what is missing."""


@dataclass(frozen=True, slots=True)
class Outcome:
    """What one invoke or resume returned: the state values and the pending interrupts."""

    values: Any
    interrupts: tuple[tuple[str, Any], ...] = ()


class Store(ABC):
    """Where a workload's checkpoints go (`backend`: `none`, `memory` or `postgres`)."""

    backend: str

    def config(self, thread_id: str, **extra: Any) -> Config:
        """The run config addressing `thread_id` (none without a checkpointer)."""
        if self.backend == "none":
            return None
        return {"configurable": {"thread_id": thread_id}, **extra}

    # Methods that child classes must implement.

    @abstractmethod
    def open(self) -> Any:
        """A fresh checkpointer (on fresh connections), or `None` for `none`."""

    @abstractmethod
    def close(self) -> None:
        """Close what `open` opened, so the server reports its statistics."""

    # Provided methods, for stores that keep nothing on a server.

    async def aopen(self) -> Any:
        """A fresh checkpointer for asyncio callers."""
        return self.open()

    async def aclose(self) -> None:
        self.close()

    def forget(self) -> None:
        """Drop every row written so far (the warm-up's)."""
        return None

    def counters(self) -> dict[str, int] | None:
        """The server's counters for this engine's database (`pg.counters`)."""
        return None

    def storage(self) -> dict[str, Any] | None:
        """Rows and bytes of the checkpoint tables (`pg.storage`)."""
        return None

    def thread_bytes(self, thread_id: str) -> int | None:
        """Bytes one thread takes in storage."""
        return None

    def teardown(self) -> None:
        """Remove what the store created (schemas)."""
        return None


class Engine(ABC):
    """One graph engine, as the workloads drive it."""

    name: str
    START: str
    END: str

    @abstractmethod
    def builder(self, state_schema: type) -> Any:
        """A graph builder over the TypedDict `state_schema` (reducers via `Annotated`)."""

    @abstractmethod
    def interrupt(self, value: Any) -> Any:
        """Pause the running node with `value`; returns the answer on resume."""

    @abstractmethod
    def store(self, backend: str, tag: str, pool_size: int | None = None) -> Store:
        """The store for `backend`; `tag` names its schema where it has one; `pool_size`
        sizes the connection pool of stores that pool connections."""

    @abstractmethod
    def invoke(self, graph: Any, input: Any, config: Config) -> Outcome: ...

    @abstractmethod
    def resume(self, graph: Any, answer: Any, config: Config) -> Outcome:
        """Answer the pending interrupt(s): a value for one, `{interrupt_id: value}` for several."""

    @abstractmethod
    async def ainvoke(self, graph: Any, input: Any, config: Config) -> Outcome: ...

    @abstractmethod
    async def aresume(self, graph: Any, answer: Any, config: Config) -> Outcome: ...

    def describe(self) -> dict[str, Any]:
        """Engine settings that shape the numbers (LangGraph's durability mode)."""
        return {}
