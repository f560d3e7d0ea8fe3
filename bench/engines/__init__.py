"""The engines under test, behind one small interface (`bench.engines.base.Engine`)."""

from __future__ import annotations

from bench.engines.base import Engine

ENGINES = ("beamweaver", "langgraph")


def load_engine(name: str, lg_durability: str = "async") -> Engine:
    """The engine called `name`; `lg_durability` is LangGraph's durability mode."""
    if name == "beamweaver":
        from bench.engines.beamweaver import BeamWeaverEngine

        return BeamWeaverEngine()
    if name == "langgraph":
        from bench.engines.langgraph import LangGraphEngine

        return LangGraphEngine(durability=lg_durability)
    raise ValueError(f"unknown engine {name!r}; use one of {ENGINES}")
