"""Graphs of the protocol fault tests (tests/protocol/test_faults.py)."""

from __future__ import annotations

import os
import time
from typing import Any

from beamweaver_core.graph import START, Graph

FAULT_GRAPHS = {"bulky": "tests.protocol.fault_graphs:bulky"}
BLOB_BYTES = 100_000
BULKY_STEPS = 100
RECURSION_LIMIT = BULKY_STEPS + 10


def _blob(i: int) -> Any:
    def node(state: dict[str, Any]) -> dict[str, Any]:
        return {"n": i, "blob": f"{i:04d}" + "x" * BLOB_BYTES}

    return node


def _linger(state: dict[str, Any]) -> dict[str, Any]:
    time.sleep(float(os.environ.get("BEAMWEAVER_TEST_LINGER_SECONDS", "0")))
    return {}


def _build() -> Any:
    builder = Graph(name="bulky")
    for i in range(BULKY_STEPS):
        builder.add_node(f"b{i}", _blob(i))
    builder.add_node("linger", _linger)
    builder.add_edge(START, "b0")
    for i in range(BULKY_STEPS - 1):
        builder.add_edge(f"b{i}", f"b{i + 1}")
    builder.add_edge(f"b{BULKY_STEPS - 1}", "linger")
    return builder.compile()


# A hundred steps (run with `recursion_limit=RECURSION_LIMIT`), each with a 100 KB value
# in its state (its `values` stream is ~10 MB), then one that waits
# `BEAMWEAVER_TEST_LINGER_SECONDS` (the run is still running, with all that stored).
bulky = _build()
