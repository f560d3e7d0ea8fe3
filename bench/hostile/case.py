"""What one on-demand hostile case is, and what it reports.

A case is a module `bench/hostile/cases/cNN_<name>.py` exposing `CASE = Case(...)`. Its
`run(options)` sets up its own processes (loopback only), injects its fault, checks the
contract of `shared/reference/reliability.md` part B, bounds every loop in count and
time, tears everything down, and returns an `Outcome`. The runner (`python -m
bench.hostile`) discovers the modules, runs the ones asked for, prints a table and
appends one JSON line per outcome to `bench/results/hostile-<date>.jsonl`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass(frozen=True, slots=True)
class Options:
    """What the runner passes to every case."""

    quick: bool = False
    """Smaller sizes and shorter faults (a harness check, minutes for the whole group)."""
    minutes: float = 30.0
    """How long the soak (case 49) runs; other cases ignore it."""
    paused: int = 2000
    """How many paused threads the soak (case 49) keeps pending; other cases ignore it."""
    seed: int = 0
    keep: bool = False
    """Leave databases and logs behind for a look afterwards."""


@dataclass(slots=True)
class Outcome:
    """One case's result. `passed` means every safety check held; `figures` are the
    measured numbers of part D (counts with their denominators, latencies in ms,
    recovery times in s); `checks` names each assertion and whether it held."""

    number: int
    title: str
    passed: bool
    figures: dict[str, Any] = field(default_factory=dict)
    checks: dict[str, bool] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def as_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True, slots=True)
class Case:
    number: int
    title: str
    run: Callable[[Options], Outcome]
    budget_s: float
    """The most this case may take in full mode (the runner enforces twice this)."""
