"""The JSON schemas of the review API's bodies: the `components` of its OpenAPI document
(`reviews.api.openapi`), kept apart from the paths that refer to them."""

from __future__ import annotations

from typing import Any

from reviews.models import ReviewItem

_NULLABLE_STRING = {"type": ["string", "null"]}
_TIME = {"type": ["string", "null"], "format": "date-time"}


COMPONENTS: dict[str, Any] = {
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


__all__ = ["COMPONENTS"]
