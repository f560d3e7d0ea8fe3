"""cProfile of a workload's timed part, summarized: top functions and own time by package.

cProfile sees the calling thread only. That is where the work is for the profiled
configurations: a sync invoke runs single-task steps and its commits on the caller's
thread (BeamWeaver always; LangGraph with `durability="sync"`).
"""

from __future__ import annotations

import cProfile
import pstats
import re
from collections import Counter
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")

_STDLIB = re.compile(r"/lib/python3\.\d+/")


def package_of(path: str) -> str:
    """A readable owner for a profiled file: package.module, stdlib.module, builtins."""
    if path == "~" or path.startswith("<"):
        return "builtins / C"
    if "site-packages/" in path:
        parts = path.split("site-packages/", 1)[1].removesuffix(".py").split("/")
        return ".".join(parts[:2]) if len(parts) > 1 else parts[0]
    for marker in ("beamweaver_core/", "bench/"):
        at = path.find(marker)
        if at == 0 or (at > 0 and path[at - 1] == "/"):
            return path[at:].removesuffix(".py").replace("/", ".")
    stdlib = _STDLIB.split(path, maxsplit=1)
    if len(stdlib) == 2:
        return "stdlib." + stdlib[1].removesuffix(".py").removesuffix("/__init__").replace("/", ".")
    return path


def module_of(path: str) -> str:
    """The dotted module of a profiled file (`langgraph.pregel._loop`), else `package_of`."""
    if "site-packages/" in path:
        return path.split("site-packages/", 1)[1].removesuffix(".py").replace("/", ".")
    return package_of(path)


def _label(key: tuple[str, int, str]) -> str:
    path, line, func = key
    if path == "~":
        return func
    return f"{module_of(path)}:{line}({func})"


def profiled(fn: Callable[[], T], top: int) -> tuple[T, dict[str, Any]]:
    """Run `fn` under cProfile; return its result and the summary of `top` entries."""
    profiler = cProfile.Profile()
    profiler.enable()
    try:
        result = fn()
    finally:
        profiler.disable()
    return result, summarize(pstats.Stats(profiler), top)


def summarize(stats: pstats.Stats, top: int) -> dict[str, Any]:
    entries = stats.stats  # type: ignore[attr-defined]
    total = sum(tt for (_cc, _nc, tt, _ct, _callers) in entries.values()) or 1.0
    by_package: Counter[str] = Counter()
    for key, (_cc, _nc, tt, _ct, _callers) in entries.items():
        by_package[package_of(key[0])] += tt
    ordered = sorted(entries.items(), key=lambda kv: kv[1][2], reverse=True)[:top]
    cumulative = sorted(entries.items(), key=lambda kv: kv[1][3], reverse=True)[:top]
    return {
        "total_s": round(total, 4),
        "own_time": [
            {
                "func": _label(key),
                "calls": nc,
                "own_s": round(tt, 4),
                "share": round(tt / total, 3),
                "cum_s": round(ct, 4),
            }
            for key, (_cc, nc, tt, ct, _callers) in ordered
        ],
        "cumulative": [
            {"func": _label(key), "calls": nc, "cum_s": round(ct, 4), "share": round(ct / total, 3)}
            for key, (_cc, nc, _tt, ct, _callers) in cumulative
        ],
        "by_package": [
            {"package": name, "own_s": round(tt, 4), "share": round(tt / total, 3)}
            for name, tt in by_package.most_common(top)
        ],
    }
