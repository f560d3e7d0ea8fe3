"""Waiting in tests for what another thread or process writes: the one polling helper."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def wait_for(
    condition: Callable[[], T],
    timeout: float = 20.0,
    what: str | None = None,
    *,
    every: float = 0.05,
) -> T:
    """The first truthy value of `condition()`, asked every `every` seconds; an
    `AssertionError` naming `what` (else the condition) once `timeout` seconds pass."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(every)
    raise AssertionError(f"timed out after {timeout} s waiting for {what or condition}")


__all__ = ["wait_for"]
