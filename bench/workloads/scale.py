"""Workload 8, scale: the big database and an empty one, side by side (`bench.scale`).

The big database (a million checkpointed threads, a hundred thousand pending review
items) is built on the first run and kept (`bench.scale.fixture`); every run measures
the inbox pages, decisions, the engine's resume and `prune_checkpoints` on it and on an
empty database, alternating request by request (`bench.scale.measure`).
"""

from __future__ import annotations

from typing import Any


def run(engine: Any, params: dict[str, Any]) -> dict[str, Any]:
    from bench.scale import measure

    return measure.run(params)
