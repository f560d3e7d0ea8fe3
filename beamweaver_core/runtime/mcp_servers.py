"""MCP servers declared in `settings.BEAMWEAVER["MCP_SERVERS"]`, one session per process.

    BEAMWEAVER["MCP_SERVERS"] = {
        "files": {"command": "python", "args": ["-m", "files_server"], "prefix": "files_"},
        "tickets": {"url": "https://mcp.example.com/mcp",
                    "headers": {"Authorization": "Bearer ..."}, "timeout": 20},
    }

A registered agent names them in its tools: `tools = [mcp_server("files"), ...]`. Each
declared server has one toolset, so one client session, per process, shared by every run
of every graph that uses it and reconnected after a failure. Workers open the sessions
when they start (`start_declared`), so the first run does not wait for a server to start.
`config_problems` is what the `beamweaver.E030` system check reports.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from beamweaver_core.conf import conf
from beamweaver_core.exceptions import BeamWeaverError

if TYPE_CHECKING:
    from beamweaver_core.agent.mcp_session import MCPSession
    from beamweaver_core.agent.mcp_tools import MCPToolset
    from beamweaver_core.agent.tools import Tool

logger = logging.getLogger(__name__)

_COMMON = {"prefix", "include", "timeout", "connect_timeout", "at_most_once"}
_STDIO = {"command", "args", "env", "cwd"} | _COMMON
_HTTP = {"url", "headers"} | _COMMON

_PREFIX = re.compile(r"[A-Za-z0-9_-]*")
_toolsets: dict[str, tuple[Any, MCPToolset]] = {}
_lock = threading.Lock()


class UnknownMCPServerError(BeamWeaverError, LookupError):
    """No MCP server of that name is declared in settings."""


def declared() -> dict[str, Any]:
    """The raw `BEAMWEAVER["MCP_SERVERS"]` setting (name -> options)."""
    servers = conf.mcp_servers or {}
    return dict(servers) if isinstance(servers, Mapping) else {}


def mcp_server(name: str) -> DeclaredMCPServer:
    """The tools of the MCP server declared in settings as `name`, for an agent's
    `tools=[...]`; resolved when the agent is built."""
    return DeclaredMCPServer(name)


class DeclaredMCPServer:
    """A toolset naming a server of `BEAMWEAVER["MCP_SERVERS"]`. Its tools look the
    process's toolset of that name up at each call, so they use the one shared session."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"mcp_server({self.name!r})"

    def get_tools(self) -> list[Tool]:
        # The `mcp` extra is optional: imported only when a declared server is used.
        from beamweaver_core.agent.mcp_tools import server_tools

        return server_tools(self)

    @property
    def label(self) -> str:
        return self.name

    @property
    def prefix(self) -> str:
        return toolset(self.name).prefix

    @property
    def include(self) -> frozenset[str] | None:
        return toolset(self.name).include

    @property
    def at_most_once(self) -> bool:
        return toolset(self.name).at_most_once

    @property
    def session(self) -> MCPSession:
        return toolset(self.name).session


def toolset(name: str) -> MCPToolset:
    """This process's toolset of the declared server `name` (made on first use, and again
    if its settings changed)."""
    servers = declared()
    options = servers.get(name)
    if options is None:
        raise UnknownMCPServerError(
            f"No MCP server named {name!r} is declared; declared: {sorted(servers)}. Add it to "
            "settings.BEAMWEAVER['MCP_SERVERS'] (or the BEAMWEAVER_MCP_SERVERS environment "
            "variable) as {'command': ..., 'args': [...]} or {'url': ..., 'headers': {...}}."
        )
    problems = config_problems({name: options})
    if problems:
        raise BeamWeaverError(" ".join(problems))
    with _lock:
        known = _toolsets.get(name)
        if known is not None and known[0] == options:
            return known[1]
        built = _build(name, options)
        _toolsets[name] = (options, built)
    if known is not None:
        known[1].close()
    return built


def _build(name: str, options: Mapping[str, Any]) -> MCPToolset:
    # The `mcp` extra is optional: imported only when a server is declared and used.
    from beamweaver_core.agent.mcp_tools import MCPServerHTTP, MCPServerStdio

    common: dict[str, Any] = {"name": name, "prefix": options.get("prefix", "")}
    for key in ("include", "timeout", "connect_timeout", "at_most_once"):
        if key in options:
            common[key] = options[key]
    if "command" in options:
        return MCPServerStdio(
            options["command"],
            list(options.get("args") or ()),
            env=options.get("env"),
            cwd=options.get("cwd"),
            **common,
        )
    return MCPServerHTTP(options["url"], headers=options.get("headers"), **common)


def start_declared() -> None:
    """Open a session with every declared server (a worker does this as it starts); a
    server that cannot be reached is logged and tried again at its first use."""
    for name in declared():
        try:
            toolset(name).connect()
        except Exception as exc:
            logger.warning("MCP server %s could not be started: %s", name, exc)


def start_declared_in_background() -> None:
    """`start_declared` on a thread of its own, so a worker claims runs meanwhile."""
    if declared():
        threading.Thread(target=start_declared, name="beamweaver-mcp-start", daemon=True).start()


def config_problems(servers: Any) -> list[str]:
    """What is wrong with a `MCP_SERVERS` setting, one sentence per problem."""
    if not isinstance(servers, Mapping):
        return [f"BEAMWEAVER['MCP_SERVERS'] must be a dict of name -> options, got {servers!r}."]
    problems = []
    for name, options in servers.items():
        where = f"BEAMWEAVER['MCP_SERVERS'][{name!r}]"
        if not isinstance(options, Mapping):
            problems.append(f"{where} must be a dict of options, got {options!r}.")
            continue
        problems.extend(_option_problems(where, options))
    return problems


def _option_problems(where: str, options: Mapping[str, Any]) -> list[str]:
    if ("command" in options) == ("url" in options):
        return [
            f"{where} must have either 'command' (a stdio server) or 'url' (a streamable HTTP "
            f"server), got the keys {sorted(options)}."
        ]
    known = _STDIO if "command" in options else _HTTP
    problems = []
    unknown = sorted(set(options) - known)
    if unknown:
        problems.append(f"{where} has unknown option(s) {unknown}; known: {sorted(known)}.")
    checks: list[tuple[str, bool, str]] = [
        (
            "command",
            isinstance(options.get("command", ""), str) and options.get("command") != "",
            "a non-empty string",
        ),
        ("args", _strings(options.get("args", [])), "a list of strings"),
        ("env", _string_map(options.get("env", {})), "a dict of string -> string"),
        ("cwd", isinstance(options.get("cwd", ""), str), "a string"),
        ("url", _http_url(options.get("url", "http://x")), "an http(s):// URL"),
        ("headers", _string_map(options.get("headers", {})), "a dict of string -> string"),
        (
            "prefix",
            isinstance(options.get("prefix", ""), str)
            and bool(_PREFIX.fullmatch(options.get("prefix", ""))),
            "letters, digits, '_' and '-' only",
        ),
        ("include", _strings(options.get("include", [])), "a list of tool names"),
        ("timeout", _positive(options.get("timeout", 1)), "a positive number of seconds"),
        (
            "connect_timeout",
            _positive(options.get("connect_timeout", 1)),
            "a positive number of seconds",
        ),
        ("at_most_once", isinstance(options.get("at_most_once", True), bool), "true or false"),
    ]
    for key, ok, expected in checks:
        if key in options and not ok:
            problems.append(f"{where}[{key!r}] must be {expected}, got {options[key]!r}.")
    return problems


def _strings(value: Any) -> bool:
    return isinstance(value, list | tuple) and all(isinstance(v, str) for v in value)


def _string_map(value: Any) -> bool:
    return isinstance(value, Mapping) and all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    )


def _http_url(value: Any) -> bool:
    if not isinstance(value, str):
        return False
    parts = urlsplit(value)
    return parts.scheme in ("http", "https") and bool(parts.netloc)


def _positive(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and value > 0


__all__ = [
    "DeclaredMCPServer",
    "UnknownMCPServerError",
    "config_problems",
    "declared",
    "mcp_server",
    "start_declared",
    "start_declared_in_background",
    "toolset",
]
