"""The workloads of issue 6, one module each; every module has `run(engine, params)`."""

from __future__ import annotations

import importlib
from typing import Any

from bench.engines.base import Engine

_LIVE = (
    "realtime_push",
    "realtime_decision",
    "realtime_inbox",
    "scale",
    "serving_cost",
    "protocol",
    "protocol_inprocess",
)
WORKLOADS = ("linear", "linear_worker", "fanout", "hitl", "growth", "concurrency", "floor", *_LIVE)
ENGINE_FREE = ("floor", *_LIVE)
"""Workloads that drive no engine adapter: the raw floor, and the live server's
workloads (the server runs BeamWeaver itself; `protocol` starts LangGraph's server as
well, in the same process; `protocol_inprocess` does the same round trip without a
server, on a database of its own as they do)."""


def run(name: str, engine: Engine | None, params: dict[str, Any]) -> dict[str, Any]:
    """Run workload `name` on `engine` (`None` for the `ENGINE_FREE` workloads)."""
    if name not in WORKLOADS:
        raise ValueError(f"unknown workload {name!r}; known: {', '.join(WORKLOADS)}")
    module = importlib.import_module(f"bench.workloads.{name}")
    result: dict[str, Any] = module.run(engine, params)
    return result
