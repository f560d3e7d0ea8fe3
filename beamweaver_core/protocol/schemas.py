"""JSON schemas of the protocol's request bodies (validated by `protocol.body`) and of
its answers (published by `protocol.openapi`), written once for both.

They follow LangGraph's OpenAPI names (`RunCreateStateful`, `ThreadSearchRequest`, ...).
Unknown fields are allowed, as LangGraph's server allows them: newer clients send fields
this server may not know yet; what is known is checked strictly.
"""

from __future__ import annotations

from typing import Any

from beamweaver_core.webhook_urls import MAX_URL_CHARS

STREAM_MODES = (
    "values",
    "updates",
    "messages",
    "messages-tuple",
    "custom",
    "events",
    "debug",
    "tasks",
    "checkpoints",
)
THREAD_STATUSES = ("idle", "busy", "interrupted", "error")
RUN_STATUSES = ("pending", "running", "error", "success", "timeout", "interrupted")
MULTITASK = ("reject", "interrupt", "rollback", "enqueue")

_ID = {"type": "string", "minLength": 1, "maxLength": 255}
_OBJECT = {"type": "object"}
_LIMIT = {"type": "integer", "minimum": 1, "maximum": 1000}
_OFFSET = {"type": "integer", "minimum": 0, "maximum": 1_000_000}
_ORDER = {"type": "string", "enum": ["asc", "desc"]}
_NODES = {
    "anyOf": [
        {"type": "string", "enum": ["*"]},
        {"type": "array", "items": {"type": "string", "maxLength": 200}, "maxItems": 200},
    ]
}

DEFS: dict[str, Any] = {
    "Config": {
        "type": "object",
        "properties": {
            "tags": {"type": "array", "items": {"type": "string"}},
            "recursion_limit": {"type": "integer", "minimum": 1, "maximum": 10_000},
            "configurable": _OBJECT,
        },
    },
    "Checkpoint": {
        "type": "object",
        "properties": {
            "thread_id": {"type": "string"},
            "checkpoint_ns": {"type": "string"},
            "checkpoint_id": {"type": ["string", "null"], "maxLength": 64},
            "checkpoint_map": {"type": ["object", "null"]},
        },
    },
    "Command": {
        "type": "object",
        "properties": {
            "update": {"type": ["object", "null"]},
            "resume": {},
            "goto": {
                "anyOf": [
                    {"type": "string", "maxLength": 200},
                    {"$ref": "#/$defs/Send"},
                    {
                        "type": "array",
                        "items": {
                            "anyOf": [
                                {"type": "string", "maxLength": 200},
                                {"$ref": "#/$defs/Send"},
                            ]
                        },
                        "maxItems": 200,
                    },
                    {"type": "null"},
                ]
            },
        },
    },
    "Send": {
        "type": "object",
        "properties": {
            "node": {"type": "string", "maxLength": 200},
            "input": {},
        },
        "required": ["node", "input"],
    },
    "StreamMode": {
        "anyOf": [
            {"type": "string", "enum": list(STREAM_MODES)},
            {"type": "array", "items": {"type": "string", "enum": list(STREAM_MODES)}},
        ]
    },
}

_RUN_FIELDS: dict[str, Any] = {
    "assistant_id": _ID,
    "input": {"type": ["object", "null"]},
    "command": {"anyOf": [{"$ref": "#/$defs/Command"}, {"type": "null"}]},
    "metadata": _OBJECT,
    "config": {"$ref": "#/$defs/Config"},
    "context": _OBJECT,
    "checkpoint": {"$ref": "#/$defs/Checkpoint"},
    "checkpoint_id": {"type": "string", "maxLength": 64},
    "checkpoint_during": {"type": "boolean"},
    "interrupt_before": _NODES,
    "interrupt_after": _NODES,
    "stream_mode": {"$ref": "#/$defs/StreamMode"},
    "stream_subgraphs": {"type": "boolean"},
    "stream_resumable": {"type": "boolean"},
    "webhook": {"type": "string", "minLength": 1, "maxLength": MAX_URL_CHARS},
    "multitask_strategy": {"type": "string", "enum": list(MULTITASK)},
    "if_not_exists": {"type": "string", "enum": ["create", "reject"]},
    "on_disconnect": {"type": "string", "enum": ["cancel", "continue"]},
    "on_completion": {"type": "string", "enum": ["delete", "keep"]},
    "after_seconds": {"type": "number", "minimum": 0},
    "feedback_keys": {"type": "array", "items": {"type": "string"}},
    "durability": {"type": "string", "enum": ["sync", "async", "exit"]},
    "strict_resume": {"type": "boolean"},
    "langsmith_tracer": {"type": ["object", "null"]},
}
_RUN = {"type": "object", "properties": _RUN_FIELDS, "required": ["assistant_id"]}

REQUESTS: dict[str, dict[str, Any]] = {
    "AssistantSearchRequest": {
        "type": "object",
        "properties": {
            "metadata": _OBJECT,
            "graph_id": {"type": "string"},
            "name": {"type": "string"},
            "limit": _LIMIT,
            "offset": _OFFSET,
            "sort_by": {
                "type": "string",
                "enum": ["assistant_id", "graph_id", "name", "created_at", "updated_at"],
            },
            "sort_order": _ORDER,
            "select": {"type": "array", "items": {"type": "string"}},
        },
    },
    "AssistantCountRequest": {
        "type": "object",
        "properties": {
            "metadata": _OBJECT,
            "graph_id": {"type": "string"},
            "name": {"type": "string"},
        },
    },
    "ThreadCreate": {
        "type": "object",
        "properties": {
            "thread_id": _ID,
            "metadata": _OBJECT,
            "if_exists": {"type": "string", "enum": ["raise", "do_nothing"]},
            "supersteps": {"type": "array"},
            "ttl": {},
        },
    },
    "ThreadPatch": {
        "type": "object",
        "properties": {"metadata": _OBJECT, "ttl": {}},
        "required": ["metadata"],
    },
    "ThreadSearchRequest": {
        "type": "object",
        "properties": {
            "metadata": _OBJECT,
            "values": _OBJECT,
            "ids": {"type": "array", "items": _ID, "maxItems": 1000},
            "status": {"type": "string", "enum": list(THREAD_STATUSES)},
            "limit": _LIMIT,
            "offset": _OFFSET,
            "sort_by": {
                "type": "string",
                "enum": ["thread_id", "status", "created_at", "updated_at", "state_updated_at"],
            },
            "sort_order": _ORDER,
            "select": {"type": "array", "items": {"type": "string"}},
            "extract": _OBJECT,
        },
    },
    "ThreadCountRequest": {
        "type": "object",
        "properties": {
            "metadata": _OBJECT,
            "values": _OBJECT,
            "status": {"type": "string", "enum": list(THREAD_STATUSES)},
        },
    },
    "ThreadStateUpdate": {
        "type": "object",
        "properties": {
            "values": {"type": ["object", "null"]},
            "as_node": {"type": "string", "maxLength": 200},
            "checkpoint": {"$ref": "#/$defs/Checkpoint"},
            "checkpoint_id": {"type": "string", "maxLength": 64},
        },
    },
    "ThreadStateCheckpointRequest": {
        "type": "object",
        "properties": {
            "checkpoint": {"$ref": "#/$defs/Checkpoint"},
            "subgraphs": {"type": "boolean"},
        },
        "required": ["checkpoint"],
    },
    "ThreadStateSearch": {
        "type": "object",
        "properties": {
            "limit": _LIMIT,
            "before": {"anyOf": [{"type": "string"}, {"$ref": "#/$defs/Checkpoint"}]},
            "metadata": _OBJECT,
            "checkpoint": {"$ref": "#/$defs/Checkpoint"},
            "select": {"type": "array", "items": {"type": "string"}},
        },
    },
    "RunCreateStateful": _RUN,
    "RunCreateStateless": _RUN,
    "RunBatchCreate": {"type": "array", "items": _RUN, "minItems": 1, "maxItems": 100},
    "RunsCancel": {
        "type": "object",
        "properties": {
            "thread_id": _ID,
            "run_ids": {
                "type": "array",
                "items": {"type": "string", "format": "uuid"},
                "maxItems": 1000,
            },
            "status": {"type": "string", "enum": ["pending", "running", "all"]},
        },
    },
}

_TIME = {"type": "string", "format": "date-time"}
_CHECKPOINT: dict[str, Any] = {
    "type": "object",
    "properties": {
        "thread_id": {"type": "string"},
        "checkpoint_ns": {"type": "string"},
        "checkpoint_id": {"type": "string"},
    },
}
_INTERRUPT = {
    "type": "object",
    "properties": {"id": {"type": "string"}, "value": {}},
    "required": ["id", "value"],
}

RESPONSES: dict[str, dict[str, Any]] = {
    "Assistant": {
        "type": "object",
        "required": [
            "assistant_id",
            "graph_id",
            "name",
            "config",
            "context",
            "metadata",
            "version",
        ],
        "properties": {
            "assistant_id": {"type": "string", "format": "uuid"},
            "graph_id": {"type": "string"},
            "name": {"type": "string"},
            "description": {"type": ["string", "null"]},
            "config": _OBJECT,
            "context": _OBJECT,
            "metadata": _OBJECT,
            "version": {"type": "integer"},
            "created_at": _TIME,
            "updated_at": _TIME,
        },
    },
    "Graph": {
        "type": "object",
        "properties": {"nodes": {"type": "array"}, "edges": {"type": "array"}},
        "required": ["nodes", "edges"],
    },
    "GraphSchema": {
        "type": "object",
        "required": ["graph_id"],
        "properties": {
            "graph_id": {"type": "string"},
            "input_schema": {"type": ["object", "null"]},
            "output_schema": {"type": ["object", "null"]},
            "state_schema": {"type": ["object", "null"]},
            "config_schema": {"type": ["object", "null"]},
            "context_schema": {"type": ["object", "null"]},
        },
    },
    "Thread": {
        "type": "object",
        "required": ["thread_id", "created_at", "updated_at", "metadata", "status", "values"],
        "properties": {
            "thread_id": {"type": "string"},
            "created_at": _TIME,
            "updated_at": _TIME,
            "state_updated_at": _TIME,
            "metadata": _OBJECT,
            "status": {"type": "string", "enum": list(THREAD_STATUSES)},
            "config": _OBJECT,
            "values": {"type": ["object", "null"]},
            "interrupts": {
                "type": "object",
                "additionalProperties": {"type": "array", "items": _INTERRUPT},
            },
            "error": {"type": ["string", "null"]},
        },
    },
    "ThreadState": {
        "type": "object",
        "required": ["values", "next", "tasks", "checkpoint", "metadata", "created_at"],
        "properties": {
            "values": {"type": ["object", "array"]},
            "next": {"type": "array", "items": {"type": "string"}},
            "tasks": {"type": "array"},
            # A thread without a checkpoint yet has a state without a checkpoint id.
            "checkpoint": {
                "type": ["object", "null"],
                "properties": {
                    **_CHECKPOINT["properties"],
                    "checkpoint_id": {"type": ["string", "null"]},
                },
            },
            "parent_checkpoint": {"type": ["object", "null"]},
            "metadata": _OBJECT,
            "created_at": {"type": ["string", "null"]},
            "interrupts": {"type": "array", "items": _INTERRUPT},
        },
    },
    "ThreadStateUpdateResponse": {
        "type": "object",
        "properties": {"checkpoint": _CHECKPOINT},
        "required": ["checkpoint"],
    },
    "Run": {
        "type": "object",
        "required": ["run_id", "thread_id", "assistant_id", "status", "metadata", "created_at"],
        "properties": {
            "run_id": {"type": "string", "format": "uuid"},
            "thread_id": {"type": "string"},
            "assistant_id": {"type": "string", "format": "uuid"},
            "created_at": _TIME,
            "updated_at": _TIME,
            "status": {"type": "string", "enum": list(RUN_STATUSES)},
            "metadata": _OBJECT,
            "multitask_strategy": {"type": "string", "enum": list(MULTITASK)},
            "kwargs": _OBJECT,
        },
    },
    "ErrorResponse": {
        "type": "object",
        "properties": {"detail": {"type": "string"}},
        "required": ["detail"],
    },
}

__all__ = [
    "DEFS",
    "MULTITASK",
    "REQUESTS",
    "RESPONSES",
    "RUN_STATUSES",
    "STREAM_MODES",
    "THREAD_STATUSES",
]
