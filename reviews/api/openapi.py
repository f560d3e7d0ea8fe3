"""The OpenAPI 3.1 description of the review API, written by hand next to the views it
describes; `tests/reviews/test_api.py` validates every real response against it and checks
that it lists exactly the API's routes, so the two cannot drift apart."""

from __future__ import annotations

from typing import Any

from reviews.api.schemas import COMPONENTS


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
        "components": COMPONENTS,
    }


__all__ = ["schema"]
