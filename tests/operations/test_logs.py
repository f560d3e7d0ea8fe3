"""JSON logs with request, run and thread ids; nothing secret in a log line."""

from __future__ import annotations

import asyncio
import io
import json
import logging
from collections.abc import Iterator
from typing import Any

import pytest

from beamweaver_core.observability import context
from beamweaver_core.observability.asgi import RequestContext
from beamweaver_core.observability.logs import ContextFilter, JsonFormatter, logging_config
from beamweaver_core.redaction import RedactingLogFilter
from tests.reviews.conftest import run_next


@pytest.fixture
def lines() -> Iterator[io.StringIO]:
    """What BeamWeaver's loggers write, as the JSON handler formats it."""
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(JsonFormatter())
    handler.addFilter(RedactingLogFilter())
    handler.addFilter(ContextFilter())
    root = logging.getLogger("beamweaver_core")
    root.addHandler(handler)
    old = root.level
    root.setLevel(logging.INFO)
    yield stream
    root.removeHandler(handler)
    root.setLevel(old)


def _records(stream: io.StringIO) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stream.getvalue().splitlines()]


def test_every_line_names_the_request_run_and_thread(lines: io.StringIO) -> None:
    log = logging.getLogger("beamweaver_core.test")
    log.info("outside")
    with context.bound(request_id="req-1", run_id="run-1", thread_id="th-1"):
        log.warning("inside %s", "a run")
    first, second = _records(lines)
    assert {k: first[k] for k in ("request_id", "run_id", "thread_id")} == dict.fromkeys(
        ("request_id", "run_id", "thread_id")
    )
    assert second["message"] == "inside a run" and second["level"] == "WARNING"
    assert (second["request_id"], second["run_id"], second["thread_id"]) == (
        "req-1",
        "run-1",
        "th-1",
    )
    assert second["logger"] == "beamweaver_core.test" and second["timestamp"].endswith("+00:00")


def test_secrets_and_objects_stay_out_of_the_lines(lines: io.StringIO) -> None:
    class Request:
        def __repr__(self) -> str:
            return "<Request GET /items/?token=abcdef123456>"

    log = logging.getLogger("beamweaver_core.test")
    log.warning(
        "headers %s",
        {"Authorization": "Basic dXNlcjpwYXNzd29yZA==", "X-Api-Key": "k-123456", "Accept": "*/*"},
        extra={"request": Request(), "status_code": 404, "path": "/x?api_key=k999&graph=g"},
    )
    try:
        raise ValueError("connecting to postgres://bw:hunter2@db/beamweaver failed")
    except ValueError:
        log.exception("Cookie: sessionid=s3cr3t; csrftoken=c")
    text = lines.getvalue()
    for secret in ("dXNlcjpwYXNzd29yZA", "k-123456", "abcdef123456", "k999", "hunter2", "s3cr3t"):
        assert secret not in text, text
    first, second = _records(lines)
    assert "request" not in first and first["status_code"] == 404
    assert first["path"] == "/x?api_key=[redacted]&graph=g"
    assert "'Accept': '*/*'" in first["message"]
    assert second["message"] == "Cookie: [redacted]"
    assert "postgres://bw:[redacted]@db/beamweaver" in second["exc_info"]


def test_the_request_middleware_gives_each_request_an_id(lines: io.StringIO) -> None:
    seen: list[str | None] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        seen.append(context.request_id.get())
        logging.getLogger("beamweaver_core.test").info("in the view")
        await send({"type": "http.response.start", "status": 204, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    sent: list[dict[str, Any]] = []

    async def send(message: Any) -> None:
        sent.append(message)

    async def receive() -> Any:
        return {"type": "http.request"}

    wrapped = RequestContext(app, access_log=True)
    scope = {"type": "http", "method": "GET", "path": "/items/", "query_string": b"token=zzz9"}
    given = {**scope, "headers": [(b"x-request-id", b"from-the-proxy-1")]}
    hostile = {**scope, "headers": [(b"x-request-id", b"evil\nline token=abc")]}
    for each in (scope, given, hostile):
        asyncio.run(wrapped(each, receive, send))
    assert seen[1] == "from-the-proxy-1"
    assert seen[0] and seen[2] and seen[0] != seen[2] and "\n" not in seen[2]
    headers = [dict(m["headers"])[b"x-request-id"].decode() for m in sent if "headers" in m]
    assert headers == seen
    records = _records(lines)
    views = [r for r in records if r["message"] == "in the view"]
    access = [r for r in records if r["logger"] == "beamweaver_core.access"]
    assert [r["request_id"] for r in views] == seen == [r["request_id"] for r in access]
    assert access[0]["message"] == "GET /items/?token=[redacted] 204"
    assert access[0]["status"] == 204 and "zzz9" not in lines.getvalue()
    assert context.request_id.get() is None


@pytest.mark.django_db(transaction=True)
def test_a_run_logs_with_its_run_and_thread(lines: io.StringIO) -> None:
    from beamweaver_core.runtime import service

    with context.bound(request_id="starter-7"):
        run = service.start_run("explode", {})
    assert run.trace_context == {"request_id": "starter-7"}
    done = run_next()
    assert done.status == "failed"
    failure = next(r for r in _records(lines) if r["message"] == f"Run {run.id} failed")
    assert failure["run_id"] == str(run.id) and failure["thread_id"] == run.thread_id
    assert failure["request_id"] == "starter-7"  # the request that queued the run


def test_an_unknown_log_format_is_refused() -> None:
    assert logging_config("json")["handlers"]["console"]["formatter"] == "json"
    with pytest.raises(ValueError, match="plain, json"):
        logging_config("xml")
