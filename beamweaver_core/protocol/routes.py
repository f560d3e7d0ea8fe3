"""Every route of `/lg`, once: its path, and per method the handler, the operation's id
and summary, and the request and answer schemas. `protocol.urls` builds the URL
patterns from this table and `protocol.openapi` the OpenAPI document, so the two cannot
drift apart."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from beamweaver_core.protocol import (
    assistant_views,
    meta_views,
    run_views,
    state_views,
    stream_views,
    thread_views,
)


@dataclass(frozen=True)
class Operation:
    handler: Callable[..., Any]
    operation_id: str
    summary: str
    request: str | None = None
    response: str | None = None
    """A response schema name, `"list:<name>"` for a list of them, a literal type, `"sse"`;
    `None` for an empty 204, `"accepted"` for an empty 202 (204 once done), `"refused"` for
    an operation always refused (405)."""
    stream: bool = False
    """An SSE stream or a long wait (an async view)."""


@dataclass(frozen=True)
class Route:
    path: str
    operations: dict[str, Operation] = field(default_factory=dict)
    public: bool = False


A, T, R, S = assistant_views, thread_views, run_views, state_views

ROUTES: tuple[Route, ...] = (
    Route(
        "/info",
        {"GET": Operation(meta_views.info, "server_info", "Server information", response="object")},
        public=True,
    ),
    Route(
        "/ok",
        {"GET": Operation(meta_views.ok, "health", "Health check", response="object")},
        public=True,
    ),
    Route(
        "/assistants",
        {
            "POST": Operation(
                A.read_only,
                "create_assistant",
                "Create an assistant (refused: assistants are the registered graphs)",
                response="refused",
            )
        },
    ),
    Route(
        "/assistants/search",
        {
            "POST": Operation(
                A.search,
                "search_assistants",
                "Search assistants",
                "AssistantSearchRequest",
                "list:Assistant",
            )
        },
    ),
    Route(
        "/assistants/count",
        {
            "POST": Operation(
                A.count, "count_assistants", "Count assistants", "AssistantCountRequest", "integer"
            )
        },
    ),
    Route(
        "/assistants/{assistant_id}",
        {
            "GET": Operation(A.get, "get_assistant", "Get an assistant", response="Assistant"),
            "PATCH": Operation(
                A.read_only,
                "patch_assistant",
                "Change an assistant (refused)",
                response="refused",
            ),
            "DELETE": Operation(
                A.read_only, "delete_assistant", "Delete an assistant (refused)", response="refused"
            ),
        },
    ),
    Route(
        "/assistants/{assistant_id}/graph",
        {
            "GET": Operation(
                A.graph,
                "get_assistant_graph",
                "The graph's nodes and edges (xray: subgraphs)",
                response="Graph",
            )
        },
    ),
    Route(
        "/assistants/{assistant_id}/schemas",
        {
            "GET": Operation(
                A.schemas, "get_assistant_schemas", "The graph's schemas", response="GraphSchema"
            )
        },
    ),
    Route(
        "/assistants/{assistant_id}/subgraphs",
        {
            "GET": Operation(
                A.subgraphs,
                "get_assistant_subgraphs",
                "The graph's subgraphs' schemas",
                response="object",
            )
        },
    ),
    Route(
        "/assistants/{assistant_id}/subgraphs/{namespace}",
        {
            "GET": Operation(
                A.subgraphs, "get_assistant_subgraph", "One subgraph's schemas", response="object"
            )
        },
    ),
    Route(
        "/assistants/{assistant_id}/versions",
        {
            "POST": Operation(
                A.read_only,
                "assistant_versions",
                "Assistant versions (refused)",
                response="refused",
            )
        },
    ),
    Route(
        "/assistants/{assistant_id}/latest",
        {
            "POST": Operation(
                A.read_only,
                "assistant_latest",
                "Set an assistant version (refused)",
                response="refused",
            )
        },
    ),
    Route(
        "/threads",
        {"POST": Operation(T.create, "create_thread", "Create a thread", "ThreadCreate", "Thread")},
    ),
    Route(
        "/threads/search",
        {
            "POST": Operation(
                T.search, "search_threads", "Search threads", "ThreadSearchRequest", "list:Thread"
            )
        },
    ),
    Route(
        "/threads/count",
        {
            "POST": Operation(
                T.count, "count_threads", "Count threads", "ThreadCountRequest", "integer"
            )
        },
    ),
    Route(
        "/threads/{thread_id}",
        {
            "GET": Operation(T.get, "get_thread", "Get a thread", response="Thread"),
            "PATCH": Operation(
                T.patch, "patch_thread", "Update a thread's metadata", "ThreadPatch", "Thread"
            ),
            "DELETE": Operation(T.delete, "delete_thread", "Delete a thread"),
        },
    ),
    Route(
        "/threads/{thread_id}/copy",
        {
            "POST": Operation(
                T.copy, "copy_thread", "Copy a thread with its history", response="Thread"
            )
        },
    ),
    Route(
        "/threads/{thread_id}/state",
        {
            "GET": Operation(
                S.get,
                "get_thread_state",
                "A thread's state (subgraphs=true: with its subgraphs')",
                response="ThreadState",
            ),
            "POST": Operation(
                S.update,
                "update_thread_state",
                "Update a thread's state (as a node, from a checkpoint)",
                "ThreadStateUpdate",
                "ThreadStateUpdateResponse",
            ),
        },
    ),
    Route(
        "/threads/{thread_id}/state/checkpoint",
        {
            "POST": Operation(
                S.at_checkpoint,
                "get_thread_state_at_checkpoint_post",
                "A thread's state at a checkpoint",
                "ThreadStateCheckpointRequest",
                "ThreadState",
            )
        },
    ),
    Route(
        "/threads/{thread_id}/state/{checkpoint_id}",
        {
            "GET": Operation(
                S.get,
                "get_thread_state_at_checkpoint",
                "A thread's state at a checkpoint",
                response="ThreadState",
            )
        },
    ),
    Route(
        "/threads/{thread_id}/history",
        {
            "GET": Operation(
                S.history,
                "get_thread_history",
                "A thread's history, newest first",
                response="list:ThreadState",
            ),
            "POST": Operation(
                S.history,
                "get_thread_history_post",
                "A thread's history, newest first",
                "ThreadStateSearch",
                "list:ThreadState",
            ),
        },
    ),
    Route(
        "/threads/{thread_id}/stream",
        {
            "GET": Operation(
                stream_views.thread_stream,
                "join_thread_stream",
                "Stream every run of a thread as it runs (SSE)",
                response="sse",
                stream=True,
            )
        },
    ),
    Route(
        "/threads/{thread_id}/runs",
        {
            "GET": Operation(
                R.listing, "list_runs", "A thread's runs, newest first", response="list:Run"
            ),
            "POST": Operation(
                R.create, "create_run", "Start a background run", "RunCreateStateful", "Run"
            ),
        },
    ),
    Route(
        "/threads/{thread_id}/runs/stream",
        {
            "POST": Operation(
                stream_views.stream,
                "stream_run",
                "Start a run and stream it (SSE)",
                "RunCreateStateful",
                "sse",
                stream=True,
            )
        },
    ),
    Route(
        "/threads/{thread_id}/runs/wait",
        {
            "POST": Operation(
                R.wait,
                "wait_run",
                "Start a run and wait for its result",
                "RunCreateStateful",
                "object",
                stream=True,
            )
        },
    ),
    Route(
        "/threads/{thread_id}/runs/{run_id}",
        {
            "GET": Operation(R.get, "get_run", "Get a run", response="Run"),
            "DELETE": Operation(R.delete, "delete_run", "Delete a finished run"),
        },
    ),
    Route(
        "/threads/{thread_id}/runs/{run_id}/join",
        {
            "GET": Operation(
                R.join, "join_run", "Wait for a run's result", response="object", stream=True
            )
        },
    ),
    Route(
        "/threads/{thread_id}/runs/{run_id}/stream",
        {
            "GET": Operation(
                stream_views.join_stream,
                "join_run_stream",
                "A run's stream, resumable with Last-Event-ID (SSE)",
                response="sse",
                stream=True,
            )
        },
    ),
    Route(
        "/threads/{thread_id}/runs/{run_id}/cancel",
        {
            "POST": Operation(
                R.cancel,
                "cancel_run",
                "Cancel a run (action=interrupt or rollback)",
                response="accepted",
            )
        },
    ),
    Route(
        "/runs",
        {
            "POST": Operation(
                R.create,
                "create_stateless_run",
                "Start a background run on a thread of its own",
                "RunCreateStateless",
                "Run",
            )
        },
    ),
    Route(
        "/runs/stream",
        {
            "POST": Operation(
                stream_views.stream,
                "stream_stateless_run",
                "Start a stateless run and stream it (SSE)",
                "RunCreateStateless",
                "sse",
                stream=True,
            )
        },
    ),
    Route(
        "/runs/wait",
        {
            "POST": Operation(
                R.wait,
                "wait_stateless_run",
                "Start a stateless run and wait for its result",
                "RunCreateStateless",
                "object",
                stream=True,
            )
        },
    ),
    Route(
        "/runs/batch",
        {
            "POST": Operation(
                R.batch,
                "create_run_batch",
                "Start several stateless runs",
                "RunBatchCreate",
                "list:Run",
            )
        },
    ),
    Route(
        "/runs/cancel",
        {
            "POST": Operation(
                R.cancel_many,
                "cancel_runs",
                "Cancel runs (action=interrupt or rollback)",
                "RunsCancel",
            )
        },
    ),
)

__all__ = ["ROUTES", "Operation", "Route"]
