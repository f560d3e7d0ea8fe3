"""The protocol benchmark never hangs: a measurement past its deadline, or one that raised,
becomes an error row (bench/workloads/protocol.py `_bounded`)."""

from __future__ import annotations

import threading
import time
from typing import Any

from bench.workloads.protocol import _bounded


def test_a_measurement_past_its_deadline_is_an_error_row() -> None:
    release = threading.Event()

    def blocked() -> dict[str, Any]:
        release.wait(60)  # stands in for a runs.wait that never returns
        return {"roundtrip_ms": {"median": 1.0}}

    started = time.perf_counter()
    try:
        row = _bounded(blocked, 0.2)
    finally:
        release.set()
    assert row == {"error": "timed out after 0 s"}
    assert time.perf_counter() - started < 5


def test_a_measurement_that_raised_is_an_error_row() -> None:
    def broken() -> dict[str, Any]:
        raise ConnectionError("server went away")

    assert _bounded(broken, 5) == {"error": "ConnectionError: server went away"}


def test_a_measurement_in_time_is_its_result() -> None:
    assert _bounded(lambda: {"roundtrip_ms": {"median": 3.0}}, 5) == {
        "roundtrip_ms": {"median": 3.0}
    }
