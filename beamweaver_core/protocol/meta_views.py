"""`/info` and `/ok`: public, holding no data."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest


def info(request: HttpRequest, user: Any) -> dict[str, Any]:
    return {
        "version": "beamweaver-0.1",
        "langgraph_py_version": None,
        "flags": {"assistants": True, "crons": False, "langsmith": False},
        "host": {"kind": "beamweaver"},
    }


def ok(request: HttpRequest, user: Any) -> dict[str, Any]:
    return {"ok": True}


__all__ = ["info", "ok"]
