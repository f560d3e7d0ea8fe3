"""Which request, run and thread the current code works for, in context variables.

Set by the request middleware (`observability.asgi.RequestContext`) for a request and by
the runtime for a run (`observability.runs.observed`); read by every log line
(`observability.logs.ContextFilter`). Context variables follow the code into the graph's
task threads (they run in a copy of the caller's context) and into Django's sync views.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from contextvars import ContextVar

request_id: ContextVar[str | None] = ContextVar("beamweaver_request_id", default=None)
run_id: ContextVar[str | None] = ContextVar("beamweaver_run_id", default=None)
thread_id: ContextVar[str | None] = ContextVar("beamweaver_thread_id", default=None)

_VARIABLES = {"request_id": request_id, "run_id": run_id, "thread_id": thread_id}
_REQUEST_ID = re.compile(r"[A-Za-z0-9._:\-]{1,64}")


def valid_request_id(value: str | None) -> str | None:
    """`value` when it can be a request id (1-64 letters, digits, `.`, `_`, `:`, `-`: a
    client's `X-Request-ID` is logged, so nothing else of it is), else `None`."""
    return value if value is not None and _REQUEST_ID.fullmatch(value) else None


def current() -> dict[str, str | None]:
    """The ids in force: `{"request_id", "run_id", "thread_id"}` (`None` when unset)."""
    return {name: variable.get() for name, variable in _VARIABLES.items()}


@contextlib.contextmanager
def bound(**ids: str | None) -> Iterator[None]:
    """Set some of `request_id`, `run_id`, `thread_id` for the body, then restore them."""
    tokens = [(_VARIABLES[name], _VARIABLES[name].set(value)) for name, value in ids.items()]
    try:
        yield
    finally:
        for variable, token in reversed(tokens):
            variable.reset(token)


__all__ = ["bound", "current", "request_id", "run_id", "thread_id", "valid_request_id"]
