"""The graph engine: Pregel-style super-steps with interrupts (api.md §1)."""

from beamweaver_core.graph.builder import Graph
from beamweaver_core.graph.compiled import CompiledGraph
from beamweaver_core.graph.interrupts import answered_interrupt, interrupt
from beamweaver_core.graph.runtime import Envelope, Runtime
from beamweaver_core.types import (
    END,
    START,
    Command,
    Completed,
    Interrupt,
    Interrupted,
    Send,
    StateSnapshot,
    TaskInfo,
    null_resume,
)

__all__ = [
    "END",
    "START",
    "Command",
    "CompiledGraph",
    "Completed",
    "Envelope",
    "Graph",
    "Interrupt",
    "Interrupted",
    "Runtime",
    "Send",
    "StateSnapshot",
    "TaskInfo",
    "answered_interrupt",
    "interrupt",
    "null_resume",
]
