"""The workloads of issue 6, one module each; every module has `run(engine, params)`."""

from __future__ import annotations

import importlib
from typing import Any

from bench.engines.base import Engine

WORKLOADS = ("linear", "fanout", "hitl", "growth", "concurrency", "floor")


def run(name: str, engine: Engine | None, params: dict[str, Any]) -> dict[str, Any]:
    """Run workload `name` on `engine` (`None` for the engine-free floor)."""
    if name not in WORKLOADS:
        raise ValueError(f"unknown workload {name!r}; known: {', '.join(WORKLOADS)}")
    module = importlib.import_module(f"bench.workloads.{name}")
    result: dict[str, Any] = module.run(engine, params)
    return result
