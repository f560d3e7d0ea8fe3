"""Errors in the protocol's shape: `{"detail": ...}` with the status LangGraph's server
answers for the same call (404 for what does not exist or may not be seen, 409 for a
conflict with the thread's state, 422 for a request the schema or the graph refuses)."""

from __future__ import annotations

from django.http import JsonResponse


class ProtocolError(Exception):
    """A request the protocol answers with `status` and `{"detail": detail}`; raised by
    the views and their helpers, answered by `errors.respond`."""

    def __init__(self, status: int, detail: str) -> None:
        super().__init__(detail)
        self.status = status
        self.detail = detail


def respond(status: int, detail: str) -> JsonResponse:
    """The protocol's error body."""
    return JsonResponse({"detail": detail}, status=status)


def not_found(what: str) -> ProtocolError:
    """404 for something unknown or hidden from the caller (they look the same)."""
    return ProtocolError(404, f"{what} not found.")


__all__ = ["ProtocolError", "not_found", "respond"]
