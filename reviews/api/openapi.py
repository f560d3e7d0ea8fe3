"""The OpenAPI 3.1 description of the review API, written by hand next to the views it
describes; `tests/reviews/test_api.py` validates every real response against it and checks
that it lists exactly the API's routes, so the two cannot drift apart."""

from __future__ import annotations

from typing import Any

from reviews.models import ReviewItem

_NULLABLE_STRING = {"type": ["string", "null"]}
_TIME = {"type": ["string", "null"], "format": "date-time"}


def _error(description: str) -> dict[str, Any]:
    return {
        "description": description,
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}},
    }


def _outcome(description: str) -> dict[str, Any]:
    return {
        "description": description,
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Outcome"}}},
    }


_COMPONENTS: dict[str, Any] = {
    "securitySchemes": {
        "token": {
            "type": "http",
            "scheme": "bearer",
            "description": "An API token (`bw_<key>_<secret>`) created in the admin or with "
            "`manage.py api_token create`. Session cookies are not accepted.",
        }
    },
    "schemas": {
        "Error": {
            "type": "object",
            "required": ["status", "code", "message"],
            "properties": {
                "status": {"type": "integer"},
                "code": {"type": "string"},
                "message": {"type": "string"},
            },
        },
        "CancelledRun": {
            "type": "object",
            "required": ["thread_id", "run", "status"],
            "properties": {
                "thread_id": {"type": "string"},
                "run": {"type": "string", "description": "The cancelled run's id."},
                "status": {"const": "cancelled"},
            },
        },
        "Problem": {
            "type": "object",
            "required": ["index", "field", "message"],
            "properties": {
                "index": {"type": ["integer", "null"]},
                "field": {"type": "string"},
                "message": {"type": "string"},
            },
        },
        "Item": {
            "type": "object",
            "required": [
                "id",
                "url",
                "thread_id",
                "graph",
                "kind",
                "tools",
                "status",
                "interrupt_id",
                "digest",
                "created_at",
                "due_at",
                "assignee",
                "claimed_by",
                "required_approvals",
                "approvals",
                "policy_version",
            ],
            "properties": {
                "id": {"type": "integer"},
                "url": {"type": "string", "description": "The item's page in the inbox."},
                "thread_id": {"type": "string"},
                "graph": {"type": "string"},
                "kind": {"enum": list(ReviewItem.Kind.values)},
                "tools": {"type": "array", "items": {"type": "string"}},
                "status": {"enum": list(ReviewItem.Status.values)},
                "interrupt_id": {"type": "string"},
                "digest": {
                    "type": "string",
                    "pattern": "^[0-9a-f]{64}$",
                    "description": "SHA-256 of the payload; send it back with a decision.",
                },
                "created_at": {"type": "string", "format": "date-time"},
                "due_at": _TIME,
                "assignee": _NULLABLE_STRING,
                "claimed_by": _NULLABLE_STRING,
                "required_approvals": {"type": "integer", "minimum": 1},
                "approvals": {"type": "integer", "minimum": 0},
                "policy_version": {"type": "string"},
            },
        },
        "ItemDetail": {
            "allOf": [
                {"$ref": "#/components/schemas/Item"},
                {
                    "type": "object",
                    "required": ["payload", "withheld", "status_reason", "approved_by", "decision"],
                    "properties": {
                        "payload": {
                            "description": "The interrupt value, redacted as every page "
                            "redacts it (credentials become `[redacted]`) unless revealed. A "
                            "tool review has `action_requests` and `review_configs`."
                        },
                        "withheld": {
                            "type": "array",
                            "items": {"type": "string"},
                            "description": "The paths in `payload` of the values the "
                            "redaction withheld (empty when revealed or nothing was).",
                        },
                        "status_reason": {"type": "string"},
                        "approved_by": {"type": "array", "items": {"type": "string"}},
                        "decision": {
                            "oneOf": [
                                {"type": "null"},
                                {
                                    "type": "object",
                                    "required": ["by", "at", "summary", "types", "source"],
                                    "properties": {
                                        "by": {"type": "string"},
                                        "at": {"type": "string", "format": "date-time"},
                                        "summary": {"type": "string"},
                                        "types": {"type": "array", "items": {"type": "string"}},
                                        "source": {"enum": ["web", "command", "api"]},
                                    },
                                },
                            ]
                        },
                    },
                },
            ]
        },
        "ItemList": {
            "type": "object",
            "required": ["items", "next"],
            "properties": {
                "items": {"type": "array", "items": {"$ref": "#/components/schemas/Item"}},
                "next": {
                    "type": ["string", "null"],
                    "description": "The next page's URL (null on the last page).",
                },
            },
        },
        "DecisionRequest": {
            "type": "object",
            "required": ["client_decision_id", "digest"],
            "properties": {
                "client_decision_id": {
                    "type": "string",
                    "pattern": "^[A-Za-z0-9._:-]{1,64}$",
                    "description": "Your id for this answer: re-sending it replays the "
                    "first outcome instead of deciding twice.",
                },
                "digest": {"type": "string", "description": "The item's digest you reviewed."},
                "interrupt_id": {"type": "string"},
                "answer": {
                    "description": 'A tool review: `{"decisions": [...]}` (or the bare '
                    'list), one per action request, each `{"type": "approve"}`, '
                    '`{"type": "edit", "edited_action": {"name", "args"}}`, '
                    '`{"type": "reject", "message"}` or '
                    '`{"type": "respond", "message"}`. A question: any JSON. A '
                    "breakpoint: null (any other value is a 422)."
                },
                "note": {
                    "type": "string",
                    "description": "Private note for the audit; never sent to the run.",
                },
                "reason": {
                    "type": "string",
                    "description": "A preset rejection reason code (fills the message of "
                    "rejects without one).",
                },
            },
        },
        "Outcome": {
            "type": "object",
            "required": ["status", "code", "message", "replayed"],
            "properties": {
                "status": {"type": "integer"},
                "code": {
                    "enum": [
                        "accepted",
                        "approval_recorded",
                        "not_found",
                        "key_reused",
                        "already_decided",
                        "gone",
                        "not_allowed",
                        "claimed",
                        "stale",
                        "payload_changed",
                        "self_approval",
                        "already_approved",
                        "invalid",
                        "busy",
                    ]
                },
                "message": {"type": "string"},
                "replayed": {"type": "boolean"},
                "item": {
                    "type": "object",
                    "required": [
                        "id",
                        "thread_id",
                        "interrupt_id",
                        "status",
                        "required_approvals",
                        "approvals",
                    ],
                    "properties": {
                        "id": {"type": "integer"},
                        "thread_id": {"type": "string"},
                        "interrupt_id": {"type": "string"},
                        "status": {"enum": list(ReviewItem.Status.values)},
                        "required_approvals": {"type": "integer"},
                        "approvals": {"type": "integer"},
                    },
                },
                "decision": {
                    "type": "object",
                    "required": ["summary", "by", "at", "resume_run"],
                    "properties": {
                        "summary": {"type": "string"},
                        "by": {"type": "string"},
                        "at": {"type": "string", "format": "date-time"},
                        "resume_run": {"type": "string"},
                    },
                },
                "problems": {"type": "array", "items": {"$ref": "#/components/schemas/Problem"}},
            },
        },
    },
}

_ITEM_ID = {
    "name": "pk",
    "in": "path",
    "required": True,
    "schema": {"type": "integer"},
    "description": "The review item's id.",
}

_PATHS: dict[str, Any] = {
    "/api/v1/items/": {
        "get": {
            "operationId": "listItems",
            "summary": "Review items the token's user may see, oldest first",
            "parameters": [
                {
                    "name": "status",
                    "in": "query",
                    "schema": {
                        "enum": ["pending", "decided", "expired", "cancelled", "all"],
                        "default": "pending",
                    },
                },
                {"name": "graph", "in": "query", "schema": {"type": "string"}},
                {"name": "tool", "in": "query", "schema": {"type": "string"}},
                {
                    "name": "limit",
                    "in": "query",
                    "schema": {"type": "integer", "minimum": 1, "maximum": 100, "default": 50},
                },
                {
                    "name": "after",
                    "in": "query",
                    "schema": {"type": "integer"},
                    "description": "Continue after this item id (see `next`).",
                },
            ],
            "responses": {
                "200": {
                    "description": "A page of items.",
                    "content": {
                        "application/json": {"schema": {"$ref": "#/components/schemas/ItemList"}}
                    },
                },
                "401": _error("No valid token."),
                "403": _error("The token's user is not a reviewer."),
                "422": _error("A query parameter is invalid."),
            },
        }
    },
    "/api/v1/items/{pk}/": {
        "get": {
            "operationId": "getItem",
            "summary": "One review item with its payload",
            "parameters": [
                _ITEM_ID,
                {
                    "name": "reveal_secrets",
                    "in": "query",
                    "description": "`1`: the payload unredacted, for a token whose user has "
                    "`reviews.reveal_secrets` (audited as `revealed`).",
                    "schema": {"enum": ["1"]},
                },
            ],
            "responses": {
                "200": {
                    "description": "The item.",
                    "content": {
                        "application/json": {"schema": {"$ref": "#/components/schemas/ItemDetail"}}
                    },
                },
                "401": _error("No valid token."),
                "403": _error("The token's user is not a reviewer, or may not reveal secrets."),
                "404": _error("No such item, or the user may not see it."),
            },
        }
    },
    "/api/v1/items/{pk}/decisions/": {
        "post": {
            "operationId": "decideItem",
            "summary": "Answer a review item (as the inbox does)",
            "parameters": [_ITEM_ID],
            "requestBody": {
                "required": True,
                "content": {
                    "application/json": {"schema": {"$ref": "#/components/schemas/DecisionRequest"}}
                },
            },
            "responses": {
                "200": _outcome("Decided: the run resumes (or the same request replayed)."),
                "202": _outcome("One approval of several recorded; the item stays pending."),
                "401": _error("No valid token."),
                "403": {
                    "description": "The review policy does not let this user decide it "
                    "(`not_allowed`), or the user started the run and may not approve it "
                    "(`self_approval`); or the token's user is not a reviewer (Error).",
                    "content": {
                        "application/json": {
                            "schema": {
                                "anyOf": [
                                    {"$ref": "#/components/schemas/Outcome"},
                                    {"$ref": "#/components/schemas/Error"},
                                ]
                            }
                        }
                    },
                },
                "404": _error("No such item, or the user may not see it."),
                "409": _outcome(
                    "`already_decided`, `claimed`, `stale`, `payload_changed`, "
                    "`already_approved` or `busy`."
                ),
                "410": _outcome("The item was cancelled or expired."),
                "422": _outcome("`invalid` (see `problems`) or `key_reused`."),
            },
        }
    },
    "/api/v1/threads/{thread_id}/cancel/": {
        "post": {
            "operationId": "cancelRun",
            "summary": "Cancel the thread's active run (and its pending items)",
            "description": "Allowed for the run's requester, a reviewer who may reject "
            "every pending item of the thread, or a user with `beamweaver_core.cancel_run` "
            "(docs/review-operations.md, who may cancel a run).",
            "parameters": [
                {
                    "name": "thread_id",
                    "in": "path",
                    "required": True,
                    "schema": {"type": "string"},
                    "description": "The thread's id.",
                }
            ],
            "responses": {
                "200": {
                    "description": "Cancelled.",
                    "content": {
                        "application/json": {
                            "schema": {"$ref": "#/components/schemas/CancelledRun"}
                        }
                    },
                },
                "401": _error("No valid token."),
                "403": _error("`not_allowed`: the user may not cancel this run."),
                "404": _error("No such thread, or the user may not see it."),
                "409": _error(
                    "`no_active_run`, or `not_cancellable` (an accepted decision's resume "
                    "is queued: cancel the resumed run once it runs)."
                ),
            },
        }
    },
    "/api/v1/openapi.json": {
        "get": {
            "operationId": "getOpenApi",
            "summary": "This document",
            "security": [],
            "responses": {"200": {"description": "The OpenAPI document."}},
        }
    },
}


def schema(server: str = "/") -> dict[str, Any]:
    """The OpenAPI document (`server`: the base URL it is served from)."""
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "BeamWeaver review API",
            "version": "1",
            "description": "List the review items waiting for a human, fetch one, post "
            "decisions with the same validation, policies and idempotency as the inbox, and "
            "cancel a thread's run by the inbox's rule.",
        },
        "servers": [{"url": server.rstrip("/") or "/"}],
        "security": [{"token": []}],
        "paths": _PATHS,
        "components": _COMPONENTS,
    }


__all__ = ["schema"]
