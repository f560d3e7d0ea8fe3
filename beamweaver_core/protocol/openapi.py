"""The OpenAPI 3.1 document of `/lg`, built from the route table (`protocol.routes`) and
the request and answer schemas (`protocol.schemas`), and served at `/lg/openapi.json`."""

from __future__ import annotations

import re
from typing import Any

from django.http import HttpRequest

from beamweaver_core.protocol import schemas
from beamweaver_core.protocol.routes import ROUTES, Operation, Route

_PARAM = re.compile(r"\{(\w+)\}")
_ERROR = {
    "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorResponse"}}}
}
_EDGE = {"400": {"description": "A NUL character in the path, query string or cookies", **_ERROR}}
"""What the project's middleware refuses before any route is chosen (`nul_guard`)."""
_ERRORS = {
    "401": {"description": "No live API token", **_ERROR},
    "403": {"description": "The token's user may not change this thread or run", **_ERROR},
    "404": {"description": "Not found (or not visible to the token's user)", **_ERROR},
    "409": {"description": "Conflict with the thread's state", **_ERROR},
    "413": {"description": "The request body is too large", **_ERROR},
    "422": {"description": "Invalid request", **_ERROR},
    "429": {"description": "Too many decisions in a short time", **_ERROR},
}
QUERY: dict[str, list[tuple[str, dict[str, Any]]]] = {
    "get_assistant_graph": [("xray", {"anyOf": [{"type": "boolean"}, {"type": "integer"}]})],
    "get_assistant_subgraphs": [("recurse", {"type": "boolean"})],
    "get_assistant_subgraph": [("recurse", {"type": "boolean"})],
    "get_thread_state": [("subgraphs", {"type": "boolean"})],
    "get_thread_state_at_checkpoint": [("subgraphs", {"type": "boolean"})],
    "get_thread_history": [("limit", {"type": "integer"}), ("before", {"type": "string"})],
    "list_runs": [
        ("limit", {"type": "integer"}),
        ("offset", {"type": "integer"}),
        ("status", {"type": "string", "enum": list(schemas.RUN_STATUSES)}),
    ],
    "join_run_stream": [
        (
            "stream_mode",
            {"type": "array", "items": {"type": "string", "enum": list(schemas.STREAM_MODES)}},
        ),
        ("cancel_on_disconnect", {"type": "boolean"}),
    ],
    "join_thread_stream": [("stream_mode", {"type": "string", "enum": ["run_modes", "lifecycle"]})],
    "cancel_run": [
        ("wait", {"type": "boolean"}),
        ("action", {"type": "string", "enum": ["interrupt", "rollback"]}),
    ],
    "cancel_runs": [("action", {"type": "string", "enum": ["interrupt", "rollback"]})],
}


def _refs(value: Any) -> Any:
    """`#/$defs/X` references as `#/components/schemas/X`."""
    if isinstance(value, dict):
        return {
            k: (v.replace("#/$defs/", "#/components/schemas/") if k == "$ref" else _refs(v))
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_refs(v) for v in value]
    return value


def _answer(op: Operation, method: str) -> dict[str, Any]:
    kind = op.response
    if kind is None:
        return {"204": {"description": "Done"}}
    if kind == "accepted":
        return {
            "202": {"description": "Accepted: the run stops as soon as its worker sees it"},
            "204": {"description": "Done (wait=true)"},
        }
    if kind == "refused":
        return {"405": {"description": "Refused: assistants are the registered graphs", **_ERROR}}
    if kind == "sse":
        return {"200": {"description": "Server-sent events", "content": {"text/event-stream": {}}}}
    if kind in ("object", "integer"):
        schema: dict[str, Any] = {"type": kind}
    elif kind.startswith("list:"):
        schema = {"type": "array", "items": {"$ref": f"#/components/schemas/{kind[5:]}"}}
    else:
        schema = {"$ref": f"#/components/schemas/{kind}"}
    return {"200": {"description": "OK", "content": {"application/json": {"schema": schema}}}}


def _operation(route: Route, method: str, op: Operation) -> dict[str, Any]:
    parameters = [
        {"name": name, "in": "path", "required": True, "schema": {"type": "string"}}
        for name in _PARAM.findall(route.path)
    ]
    parameters += [
        {"name": name, "in": "query", "required": False, "schema": schema}
        for name, schema in QUERY.get(op.operation_id, ())
    ]
    if op.operation_id == "join_run_stream":
        parameters.append(
            {
                "name": "Last-Event-ID",
                "in": "header",
                "required": False,
                "schema": {"type": "string"},
            }
        )
    spec: dict[str, Any] = {
        "operationId": op.operation_id,
        "summary": op.summary,
        "tags": [route.path.strip("/").split("/")[0]],
        "parameters": parameters,
        "responses": {**_answer(op, method), **_EDGE, **({} if route.public else _ERRORS)},
    }
    if op.request is not None:
        spec["requestBody"] = {
            "description": "An empty body is `{}`.",
            "required": False,
            "content": {
                "application/json": {"schema": {"$ref": f"#/components/schemas/{op.request}"}}
            },
        }
    if route.public:
        spec["security"] = []
    return spec


def document(server: str) -> dict[str, Any]:
    """The OpenAPI document, with `server` (the URL of `/lg`) as its server."""
    paths: dict[str, Any] = {
        route.path: {m.lower(): _operation(route, m, op) for m, op in route.operations.items()}
        for route in ROUTES
    }
    paths["/openapi.json"] = {
        "get": {
            "operationId": "openapi",
            "summary": "This document",
            "tags": ["openapi.json"],
            "parameters": [],
            "security": [],
            "responses": {
                "200": {
                    "description": "OK",
                    "content": {"application/json": {"schema": {"type": "object"}}},
                },
                **_EDGE,
            },
        }
    }
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "BeamWeaver: LangGraph Platform protocol",
            "version": "1",
            "description": "Threads, runs and streams for the official LangGraph SDKs, served by "
            "BeamWeaver's durable runtime (docs/protocol.md says what differs from LangGraph's "
            "own server).",
        },
        "servers": [{"url": server}],
        "security": [{"apiKey": []}, {"bearer": []}],
        "paths": paths,
        "components": {
            "schemas": _refs({**schemas.DEFS, **schemas.REQUESTS, **schemas.RESPONSES}),
            "securitySchemes": {
                "apiKey": {"type": "apiKey", "in": "header", "name": "x-api-key"},
                "bearer": {"type": "http", "scheme": "bearer"},
            },
        },
    }


def view(request: HttpRequest, user: Any) -> dict[str, Any]:
    """`/lg/openapi.json`."""
    return document(request.build_absolute_uri("/lg"))


__all__ = ["document", "view"]
