"""The protocol benchmark's row measures what it says, against a live server through the
official SDK (bench/workloads/protocol.py `_measure`): the HITL round trips, their floor
(three authenticated requests that start nothing) and the first stream events, each
counted after its warm-up, and the server's CPU per round trip and per floor from the
reader it is given. CI runs it tiny; `python -m bench --only protocol` runs it full."""

from __future__ import annotations

from typing import Any

from langgraph_sdk import get_sync_client

from bench.workloads.protocol import _measure


def test_the_row_measures_round_trips_their_floor_and_the_servers_cpu(
    lg_url: str, alice_token: str
) -> None:
    client = get_sync_client(url=lg_url, api_key=alice_token)
    # CPU seconds as the server's process would report them: read before and after the
    # round trips (0.0 → 0.6), then before and after the floor (0.6 → 0.9).
    readings = iter([0.0, 0.6, 0.6, 0.9])
    params = {"roundtrips": 2, "warmup": 1, "streams": 2}

    row: dict[str, Any] = _measure(client, params, lambda: next(readings))

    for key in ("roundtrip_ms", "floor_ms"):
        assert row[key]["n"] == 2 and row[key]["median"] > 0, row
    assert row["first_event_ms"]["n"] == row["first_update_ms"]["n"] == 2
    # Per measured one, warm-up included in the CPU: 600 ms / 3 and 300 ms / 3.
    assert row["server_cpu_ms_per_roundtrip"] == 200.0
    assert row["server_cpu_ms_per_floor"] == 100.0
    assert next(readings, None) is None


def test_without_a_reader_the_row_has_no_cpu_figures(lg_url: str, alice_token: str) -> None:
    client = get_sync_client(url=lg_url, api_key=alice_token)
    row = _measure(client, {"roundtrips": 1, "warmup": 0, "streams": 1})
    assert row["floor_ms"]["n"] == row["roundtrip_ms"]["n"] == 1
    assert not [key for key in row if key.startswith("server_cpu")]
