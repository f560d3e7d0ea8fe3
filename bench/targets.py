"""The targets of issue 6, and how a table row is judged against them.

Ratios are BeamWeaver / LangGraph of the medians over repetitions (each repetition's own
median first), from the same run on the same machine.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class Judged:
    """A target's text for the table and the verdict (`None`: nothing to judge)."""

    text: str
    passed: bool | None


class Target(ABC):
    @abstractmethod
    def judge(self, bw: float | None, lg: float | None, facts: dict[str, Any]) -> Judged:
        """Judge BeamWeaver's value `bw` (LangGraph's `lg`); `facts` holds figures from
        elsewhere in the run (`floor_ms`, the row's own `raw_message_bytes`)."""


def _ratio(bw: float | None, lg: float | None) -> float | None:
    if bw is None or lg is None or lg == 0:
        return None
    return bw / lg


@dataclass(frozen=True, slots=True)
class RatioAtMost(Target):
    limit: float

    def judge(self, bw: float | None, lg: float | None, facts: dict[str, Any]) -> Judged:
        ratio = _ratio(bw, lg)
        return Judged(f"ratio ≤ {self.limit}", None if ratio is None else ratio <= self.limit)


@dataclass(frozen=True, slots=True)
class RatioAtLeast(Target):
    limit: float

    def judge(self, bw: float | None, lg: float | None, facts: dict[str, Any]) -> Judged:
        ratio = _ratio(bw, lg)
        return Judged(f"ratio ≥ {self.limit}", None if ratio is None else ratio >= self.limit)


@dataclass(frozen=True, slots=True)
class AtMost(Target):
    """BeamWeaver's value itself is bounded (commits per step)."""

    limit: float
    what: str

    def judge(self, bw: float | None, lg: float | None, facts: dict[str, Any]) -> Judged:
        return Judged(f"≤ {self.limit:g} {self.what}", None if bw is None else bw <= self.limit)


@dataclass(frozen=True, slots=True)
class FloorBound(Target):
    """BeamWeaver's invoke within `factor` x `steps` x the floor (one durable commit)."""

    factor: float
    steps: int

    def judge(self, bw: float | None, lg: float | None, facts: dict[str, Any]) -> Judged:
        floor = facts.get("floor_ms")
        if floor is None:
            return Judged(f"≤ {self.factor} x {self.steps} x floor (floor not measured)", None)
        bound = self.factor * self.steps * floor
        text = f"≤ {bound:.2f} ms ({self.factor} x {self.steps} x {floor:.3f} ms floor)"
        return Judged(text, None if bw is None else bw <= bound)


@dataclass(frozen=True, slots=True)
class WithinFactOf(Target):
    """BeamWeaver's value within `factor` x a figure measured elsewhere in the same run
    (`facts[fact]`, e.g. the in-process Postgres HITL round trip)."""

    factor: float
    fact: str
    what: str

    def judge(self, bw: float | None, lg: float | None, facts: dict[str, Any]) -> Judged:
        base = facts.get(self.fact)
        if base is None:
            return Judged(f"≤ {self.factor:g} x {self.what} (not measured in this run)", None)
        bound = self.factor * base
        text = f"≤ {bound:.2f} ms ({self.factor:g} x {base:.2f} ms {self.what})"
        return Judged(text, None if bw is None else bw <= bound)


@dataclass(frozen=True, slots=True)
class RawBytesBound(Target):
    """Bytes stored within `factor` x the raw bytes of the messages themselves."""

    factor: float

    def judge(self, bw: float | None, lg: float | None, facts: dict[str, Any]) -> Judged:
        raw = facts.get("raw_message_bytes")
        if raw is None:
            return Judged(f"≤ {self.factor:g}x raw message bytes", None)
        bound = self.factor * raw
        text = f"≤ {bound:,.0f} B ({self.factor:g}x {raw:,.0f} B raw)"
        return Judged(text, None if bw is None else bw <= bound)


@dataclass(frozen=True, slots=True)
class ForComparison(Target):
    """A target's bound shown on a row that is not the target row (another server mode,
    another rate): the text says so, and there is no verdict."""

    inner: Target

    def judge(self, bw: float | None, lg: float | None, facts: dict[str, Any]) -> Judged:
        return Judged(f"({self.inner.judge(bw, lg, facts).text}: for comparison)", None)
