"""Where the hostile tests' fake tools put their side effects, so that duplicates count.

`BEAMWEAVER_EFFECTS` names the sink: a file path (one JSON line per execution, appended;
the CI tests read it back) or the URL of the fake tool service on loopback
(`bench.hostile.toolservice`, which honours `Idempotency-Key` the way a payment API
does). Nothing is recorded when it is unset. The sink has no uniqueness of its own: a
tool that runs twice writes twice, which is what the checks look for.
"""

from __future__ import annotations

import json
import os
import time
import urllib.request
from collections import Counter
from pathlib import Path
from typing import Any

EFFECTS_ENV = "BEAMWEAVER_EFFECTS"
"""Environment variable naming the sink (a file path or an `http://` URL)."""

PAUSE_ENV = "BEAMWEAVER_EFFECT_PAUSE"
"""Seconds a tool sleeps after its effect and before returning (a kill lands there)."""

DELAY_ENV = "BEAMWEAVER_EFFECT_DELAY"
"""Seconds a tool sleeps before its effect (after the ledger recorded the call as
started): a kill or a stop there lands before anything happened outside."""

CRASH_ENV = "BEAMWEAVER_EFFECT_CRASH"
"""A tool name, or `*` for any: that tool raises `SimulatedCrash` right after its effect
(in process)."""


class SimulatedCrash(BaseException):
    """The worker "dies" after a side effect and before its result is recorded.

    A `BaseException`, like the `SystemExit` of a killed process: no `except Exception`
    in the engine records anything on its way out."""


def record(
    tool: str, key: str, args: dict[str, Any], *, thread: str | None, idempotent: bool = True
) -> str:
    """Apply the side effect of `tool` once more; returns what the sink answered."""
    delay = float(os.environ.get(DELAY_ENV) or 0)
    if delay:
        time.sleep(delay)
    target = os.environ.get(EFFECTS_ENV, "")
    if target.startswith(("http://", "https://")):
        answer = _post(target, tool, key, args, thread, idempotent)
    elif target:
        effect = {"tool": tool, "key": key, "args": args, "thread": thread}
        line = json.dumps(effect, sort_keys=True)
        with Path(target).open("a", encoding="utf-8") as out:
            out.write(line + "\n")
        answer = f"{tool} done"
    else:
        answer = f"{tool} done (no effects sink)"
    pause = float(os.environ.get(PAUSE_ENV) or 0)
    if pause:
        time.sleep(pause)
    if os.environ.get(CRASH_ENV) in (tool, "*"):
        raise SimulatedCrash(f"crashed after the effect of {tool} ({key[:12]})")
    return answer


def _post(
    url: str, tool: str, key: str, args: dict[str, Any], thread: str | None, idempotent: bool
) -> str:
    body = json.dumps({"tool": tool, "args": args, "thread": thread}).encode()
    headers = {"Content-Type": "application/json"}
    if idempotent:
        headers["Idempotency-Key"] = key
    else:
        headers["X-Effect-Key"] = key
    request = urllib.request.Request(
        url.rstrip("/") + "/effects", data=body, headers=headers, method="POST"
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        return str(json.loads(response.read())["result"])


def read(path: Path) -> list[dict[str, Any]]:
    """Every effect a file sink holds, in order."""
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def counts(path: Path) -> Counter[str]:
    """How many times each idempotency key took effect."""
    return Counter(effect["key"] for effect in read(path))


__all__ = [
    "CRASH_ENV",
    "DELAY_ENV",
    "EFFECTS_ENV",
    "PAUSE_ENV",
    "SimulatedCrash",
    "counts",
    "read",
    "record",
]
