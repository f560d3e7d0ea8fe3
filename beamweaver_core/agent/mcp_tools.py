"""The tools of MCP servers, as agent tools: `MCPServerStdio` and `MCPServerHTTP`.

Put a server in an agent's `tools=[...]`: when the agent is built, the server's tools are
listed and each becomes a `Tool` with the server's name (after an optional `prefix`),
description and `inputSchema`, so review (`interrupt_on` by name), validation of edited
arguments and the tool ledger apply as to any tool. Each call carries the ledger's
idempotency key in its request `_meta` (`IDEMPOTENCY_META_KEY`).

A server that errs, exits or does not answer within `timeout` is an error tool message to
the model and an `mcp.error` run event, never a failed run. MCP tools are at most once by
default: if a worker dies after sending a call, the retried step asks a human whether it
took effect instead of calling again (see `agent.ledger`).
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import urlsplit

from jsonschema import Draft202012Validator

from beamweaver_core.agent.mcp_session import (
    IDEMPOTENCY_META_KEY,
    HTTPTarget,
    MCPSession,
    StdioTarget,
)
from beamweaver_core.agent.tools import Tool, ToolRuntime
from beamweaver_core.exceptions import MCPServerError
from beamweaver_core.messages import Message

if TYPE_CHECKING:
    import mcp_types

logger = logging.getLogger(__name__)

MAX_RESULT_CHARS = 100_000
"""A tool result longer than this is cut (the model and the inbox get the start)."""

_PREFIX = re.compile(r"[A-Za-z0-9_-]*")
_TOOL_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
"""A tool name model providers take (OpenAI's and Anthropic's rule for function names)."""


class MCPToolset:
    """The tools of one MCP server; put it in `tools=[...]`. See the subclasses.

    `prefix` is prepended to every tool name (to tell servers apart when two offer a
    tool of the same name), `include` keeps only the named tools (names as the server
    gives them), `timeout` bounds every call and `connect_timeout` opening the session
    (seconds; a stdio server is started then), and `at_most_once`
    (default True) makes a call whose outcome a crash left unknown ask a human instead of
    being sent again; set it to False for a server that de-duplicates calls by their
    idempotency key.
    """

    def __init__(
        self,
        label: str,
        target: StdioTarget | HTTPTarget,
        *,
        prefix: str = "",
        include: Iterable[str] | None = None,
        timeout: float = 30.0,
        connect_timeout: float = 60.0,
        at_most_once: bool = True,
    ) -> None:
        if not isinstance(prefix, str) or not _PREFIX.fullmatch(prefix):
            raise ValueError(
                f"The tool prefix of MCP server {label!r} must use only letters, digits, '_' "
                f"and '-' (model providers refuse other characters in tool names), got {prefix!r}."
            )
        self.label = label
        self.prefix = prefix
        self.include = frozenset(include) if include is not None else None
        self.at_most_once = at_most_once
        self.session = MCPSession(label, target, timeout=timeout, connect_timeout=connect_timeout)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.label!r}>"

    def get_tools(self) -> list[Tool]:
        """List the server's tools (connecting if needed) as agent tools."""
        return server_tools(self)

    def connect(self) -> None:
        """Open the session now instead of at the first use."""
        self.session.connect()

    def close(self) -> None:
        """Close the session (stops a stdio server); the next use opens it again."""
        self.session.close()


class MCPServerLike(Protocol):
    """What an `MCPTool` reads of its server at each call: an `MCPToolset`, or a server
    declared in settings (`runtime.mcp_servers`), which names the process's toolset."""

    @property
    def label(self) -> str: ...

    @property
    def prefix(self) -> str: ...

    @property
    def include(self) -> frozenset[str] | None: ...

    @property
    def at_most_once(self) -> bool: ...

    @property
    def session(self) -> MCPSession: ...


def server_tools(server: MCPServerLike) -> list[Tool]:
    """The tools `server` offers, as agent tools (connecting if needed)."""
    try:
        listed = server.session.list_tools()
    except MCPServerError as exc:
        raise MCPServerError(
            f"Cannot build the tools of MCP server {server.label!r}: {exc}"
        ) from exc
    include = server.include
    if include is not None:
        missing = sorted(include - {r.name for r in listed})
        if missing:
            raise ValueError(
                f"MCP server {server.label!r} offers no tool named {missing}; it offers "
                f"{sorted(r.name for r in listed)}. Fix include=."
            )
    return [MCPTool(server, r) for r in listed if include is None or r.name in include]


class MCPServerStdio(MCPToolset):
    """An MCP server started as a subprocess (`command` with `args`), speaking MCP on its
    stdin/stdout. `env` is added to a minimal inherited environment (PATH, HOME, ...);
    `name` labels the server in messages and events (default: the command's name)."""

    def __init__(
        self,
        command: str,
        args: Sequence[str] = (),
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        name: str | None = None,
        prefix: str = "",
        include: Iterable[str] | None = None,
        timeout: float = 30.0,
        connect_timeout: float = 60.0,
        at_most_once: bool = True,
    ) -> None:
        target = StdioTarget(command, tuple(args), dict(env) if env else None, cwd)
        label = name or command.rsplit("/", 1)[-1]
        super().__init__(
            label,
            target,
            prefix=prefix,
            include=include,
            timeout=timeout,
            connect_timeout=connect_timeout,
            at_most_once=at_most_once,
        )


class MCPServerHTTP(MCPToolset):
    """An MCP server reached over streamable HTTP at `url`; `headers` go with every
    request (e.g. `{"Authorization": "Bearer ..."}`). `name` labels the server in messages
    and events (default: the URL's host and port)."""

    def __init__(
        self,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        name: str | None = None,
        prefix: str = "",
        include: Iterable[str] | None = None,
        timeout: float = 30.0,
        connect_timeout: float = 60.0,
        at_most_once: bool = True,
    ) -> None:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ValueError(f"An MCP server URL must be http(s)://host/path, got {url!r}.")
        super().__init__(
            name or parts.netloc,
            HTTPTarget(url, dict(headers or {})),
            prefix=prefix,
            include=include,
            timeout=timeout,
            connect_timeout=connect_timeout,
            at_most_once=at_most_once,
        )


class MCPTool(Tool):
    """One tool of an MCP server."""

    def __init__(self, server: MCPServerLike, remote: mcp_types.Tool) -> None:
        self.server = server
        self.remote_name = remote.name
        self.name = server.prefix + remote.name
        self.description = (
            remote.description
            or remote.title
            or f"The `{remote.name}` tool of MCP server {server.label!r}."
        )
        self.args_schema = remote.input_schema
        self.at_most_once = server.at_most_once
        self.origin = f"MCP server {server.label!r}"

    def check(self) -> Draft202012Validator:
        """As `Tool.check`, and the server's name for the tool (untrusted) is one model
        providers take: otherwise every model call of the agent would be refused."""
        if not _TOOL_NAME.fullmatch(self.name):
            shown = self.name if len(self.name) <= 80 else f"{self.name[:80]}..."
            raise ValueError(
                f"MCP server {self.server.label!r} offers a tool named {shown!r} "
                f"({len(self.name)} characters with the prefix): model providers take only "
                "1 to 64 letters, digits, '_' and '-'. Leave it out with include=[...]."
            )
        return super().check()

    def run(self, args: dict[str, Any], runtime: ToolRuntime) -> Message:
        """Call the tool on its server; its result (or failure) as the tool message."""
        try:
            result = self.server.session.call_tool(
                self.remote_name, args, meta={IDEMPOTENCY_META_KEY: runtime.idempotency_key}
            )
        except MCPServerError as exc:
            logger.warning("MCP tool %s (call %s) failed: %s", self.name, runtime.tool_call_id, exc)
            runtime.emit(
                "mcp.error",
                {
                    "server": self.server.label,
                    "tool": self.name,
                    "tool_call_id": runtime.tool_call_id,
                    "error": type(exc).__name__,
                    "message": str(exc),
                },
            )
            return Message.tool(
                f"Error: the call of tool `{self.name}` failed: {exc} Whether it took effect is "
                "unknown; check before calling it again.",
                tool_call_id=runtime.tool_call_id,
                name=self.name,
                status="error",
            )
        return tool_message(result, tool=self.name, tool_call_id=runtime.tool_call_id)


def tool_message(result: mcp_types.CallToolResult, *, tool: str, tool_call_id: str) -> Message:
    """The tool message of an MCP tool result.

    Structured content (JSON) is the result when the server sends it; otherwise the text
    blocks, with a placeholder for each non-text block. A result marked as an error
    becomes an error message.
    """
    text = "\n".join(_block_text(block) for block in result.content)
    if result.is_error:
        detail = text or json.dumps(result.structured_content, ensure_ascii=False)
        return Message.tool(
            _clip(f"Error: tool `{tool}` reported an error: {detail}"),
            tool_call_id=tool_call_id,
            name=tool,
            status="error",
        )
    if result.structured_content is not None:
        content = json.dumps(result.structured_content, ensure_ascii=False, sort_keys=True)
    else:
        content = text
    return Message.tool(_clip(content), tool_call_id=tool_call_id, name=tool)


def _block_text(block: mcp_types.ContentBlock) -> str:
    # The SDK's content blocks are told apart by their `type` tag, as on the wire.
    if block.type == "text":
        return block.text
    if block.type in ("image", "audio"):
        return f"[{block.type} {block.mime_type}, {len(block.data)} base64 characters]"
    if block.type == "resource":
        inner = block.resource
        text = getattr(inner, "text", None)
        if isinstance(text, str):
            return text
        return f"[resource {inner.uri} ({inner.mime_type or 'binary'})]"
    if block.type == "resource_link":
        return f"[resource link {block.uri}]"
    return f"[{block.type} content]"


def _clip(text: str) -> str:
    if len(text) <= MAX_RESULT_CHARS:
        return text
    return f"{text[:MAX_RESULT_CHARS]}… [{len(text) - MAX_RESULT_CHARS} more characters cut]"


__all__ = [
    "IDEMPOTENCY_META_KEY",
    "MAX_RESULT_CHARS",
    "MCPServerHTTP",
    "MCPServerLike",
    "MCPServerStdio",
    "MCPTool",
    "MCPToolset",
    "server_tools",
    "tool_message",
]
