"""One client session with an MCP server, held open on a background event loop.

The `mcp` SDK is async, and a session belongs to the event loop, and the task, that opened
it: its transport runs in a task group entered by that task. Tools, though, run on graph
worker threads, each call from whichever thread runs the step. So each session is held
open by a task of its own on one event-loop thread per process, and a call from any thread
is a coroutine submitted to that loop and waited for, bounded by the server's timeout.

A session whose server exits, drops the connection or does not answer in time is closed;
the next call opens a new one (a stdio server is started again).
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import logging
import os
import threading
import weakref
from collections.abc import AsyncIterator, Coroutine, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, TypeVar

from beamweaver_core.exceptions import MCPConnectionError, MCPServerError, MCPTimeoutError

try:
    import httpx2
    import mcp_types
    from mcp import Client, StdioServerParameters
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared.exceptions import MCPError
except ImportError as exc:  # pragma: no cover - depends on the installed extras
    raise ImportError(
        "MCP tools need the official `mcp` SDK, which is not installed. Install the extra: "
        "pip install 'beamweaver[mcp]'"
    ) from exc

logger = logging.getLogger(__name__)

IDEMPOTENCY_META_KEY = "beamweaver/idempotency-key"
"""The request `_meta` key that carries the tool ledger's idempotency key of a call."""

_MAX_PAGES = 100
"""A `tools/list` that pages on for longer than this is refused (a server cannot hang
discovery by paging forever)."""

_GRACE_SECONDS = 5.0
"""Extra time the calling thread waits beyond the server's timeout, for the loop to
report the timeout itself (it only fails to if the loop thread is stuck)."""

_CLOSE_SECONDS = 10.0
_T = TypeVar("_T")


@dataclass(frozen=True, slots=True)
class StdioTarget:
    """A server started as a subprocess that speaks MCP on its stdin and stdout.

    `env` is merged over the SDK's safe default environment (PATH, HOME, ...)."""

    command: str
    args: tuple[str, ...] = ()
    env: Mapping[str, str] | None = None
    cwd: str | None = None

    def describe(self) -> str:
        return " ".join([self.command, *self.args])


@dataclass(frozen=True, slots=True)
class HTTPTarget:
    """A server reached over streamable HTTP at `url`, with `headers` (e.g. auth) on
    every request."""

    url: str
    headers: Mapping[str, str] = field(default_factory=dict)

    def describe(self) -> str:
        return self.url


class _LoopThread:
    """The process's event loop for MCP sessions, on a daemon thread started on demand."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._pid = 0

    def loop(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            alive = self._thread is not None and self._thread.is_alive()
            # A forked child inherits the loop object but not its thread.
            if self._loop is None or not alive or self._pid != os.getpid():
                self._loop = asyncio.new_event_loop()
                self._thread = threading.Thread(
                    target=self._loop.run_forever, name="beamweaver-mcp", daemon=True
                )
                self._thread.start()
                self._pid = os.getpid()
            return self._loop

    def on_loop(self) -> bool:
        return self._thread is threading.current_thread()


_LOOP = _LoopThread()
_SESSIONS: weakref.WeakSet[MCPSession] = weakref.WeakSet()


class MCPSession:
    """A client session with one MCP server, shared by every thread of the process.

    The session opens on first use (or `connect()`) within `connect_timeout` seconds
    (starting a stdio server can take a while), and every call is bounded by `timeout`
    seconds. Calls raise `MCPConnectionError` (unreachable, or the server exited or dropped
    the connection), `MCPTimeoutError`, or `MCPServerError` (an error answer of the
    protocol); after the first two the session is closed and the next call opens a new one.
    """

    def __init__(
        self,
        label: str,
        target: StdioTarget | HTTPTarget,
        *,
        timeout: float,
        connect_timeout: float,
    ) -> None:
        for option, value in (("timeout", timeout), ("connect_timeout", connect_timeout)):
            if not isinstance(value, int | float) or not value > 0:
                raise ValueError(
                    f"The {option} of MCP server {label!r} must be a positive number of "
                    f"seconds, got {value!r}."
                )
        self.label = label
        self.target = target
        self.timeout = float(timeout)
        self.connect_timeout = float(connect_timeout)
        # Touched only on the loop thread.
        self._client: Client | None = None
        self._holder: asyncio.Task[None] | None = None
        self._closing: asyncio.Event | None = None
        self._open_lock: asyncio.Lock | None = None
        _SESSIONS.add(self)

    def __repr__(self) -> str:
        return f"<MCPSession {self.label!r} {self.target.describe()}>"

    # -- from any thread ----------------------------------------------------------------

    @property
    def connected(self) -> bool:
        """Whether a session is open (it may still turn out broken at the next call)."""
        holder = self._holder
        return self._client is not None and holder is not None and not holder.done()

    def connect(self) -> None:
        """Open the session now (a worker starts its servers before the first run)."""
        self._submit(self._session(), self.connect_timeout)

    def list_tools(self) -> list[mcp_types.Tool]:
        """Every tool the server offers (all pages of `tools/list`)."""
        return self._submit(self._list_tools(), self.connect_timeout + self.timeout)

    def call_tool(
        self, name: str, arguments: Mapping[str, Any], *, meta: Mapping[str, Any] | None = None
    ) -> mcp_types.CallToolResult:
        """Call tool `name`; `meta` travels as the request's `_meta`."""
        return self._submit(
            self._call_tool(name, dict(arguments), dict(meta or {})),
            self.connect_timeout + self.timeout,
        )

    def close(self) -> None:
        """Close the session (it opens again on the next call)."""
        loop = _LOOP.loop()
        future = asyncio.run_coroutine_threadsafe(self._close(), loop)
        try:
            future.result(_CLOSE_SECONDS)
        except concurrent.futures.TimeoutError:
            logger.warning("MCP server %s did not close within %ss", self.label, _CLOSE_SECONDS)

    def _submit(self, coro: Coroutine[Any, Any, _T], bound: float) -> _T:
        """Run `coro` on the loop; `bound` is how long it may take at most (the loop
        enforces the timeouts itself; this is the safety net if the loop is stuck)."""
        if _LOOP.on_loop():
            coro.close()
            raise RuntimeError("MCPSession's blocking methods cannot run on its own event loop.")
        future = asyncio.run_coroutine_threadsafe(coro, _LOOP.loop())
        try:
            return future.result(bound + _GRACE_SECONDS)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise MCPTimeoutError(self._late(f"within {bound + _GRACE_SECONDS:g}s")) from None

    # -- on the loop ----------------------------------------------------------------------

    async def _session(self) -> Client:
        if self._open_lock is None:
            self._open_lock = asyncio.Lock()
        async with self._open_lock:
            if self._client is not None and self._holder is not None and not self._holder.done():
                return self._client
            ready: asyncio.Future[Client] = asyncio.get_running_loop().create_future()
            closing = asyncio.Event()
            holder = asyncio.create_task(self._hold(ready, closing), name=f"mcp:{self.label}")
            self._holder, self._closing = holder, closing
            try:
                client = await asyncio.wait_for(asyncio.shield(ready), self.connect_timeout)
            except TimeoutError:
                # Abandon the attempt quietly: nobody waits for `ready` any more.
                closing.set()
                ready.cancel()
                holder.cancel()
                raise MCPTimeoutError(
                    f"MCP server {self.label!r} ({self.target.describe()}) did not finish "
                    f"connecting within {self.connect_timeout:g}s (connect_timeout). Check that "
                    "it runs, or raise connect_timeout if it starts slowly."
                ) from None
            except Exception as exc:
                raise MCPConnectionError(
                    f"Cannot connect to MCP server {self.label!r} ({self.target.describe()}): "
                    f"{_reason(exc)}. Check that the server runs and its settings are right."
                ) from exc
            self._client = client
            logger.info("Connected to MCP server %s (%s)", self.label, self.target.describe())
            return client

    async def _hold(self, ready: asyncio.Future[Client], closing: asyncio.Event) -> None:
        """Keep the session open until `closing` is set or the connection fails."""
        try:
            async with self._open() as client:
                ready.set_result(client)
                await closing.wait()
        except BaseException as exc:  # the transport's task group raises groups
            if not ready.done():
                # Only a task cancelled from outside ends without an Exception here.
                failure = exc if isinstance(exc, Exception) else MCPConnectionError("cancelled")
                ready.set_exception(failure)
            elif not closing.is_set():
                logger.warning("The session with MCP server %s ended: %s", self.label, _reason(exc))
        finally:
            if self._holder is asyncio.current_task():
                self._client = None

    @asynccontextmanager
    async def _open(self) -> AsyncIterator[Client]:
        target = self.target
        if isinstance(target, StdioTarget):
            params = StdioServerParameters(
                command=target.command,
                args=list(target.args),
                env=dict(target.env) if target.env else None,
                cwd=target.cwd,
            )
            async with Client(params, cache=None) as client:
                yield client
            return
        # The read timeout covers the server's event stream, which may stay quiet for long;
        # each call is bounded by `self.timeout` on its own.
        timeout = httpx2.Timeout(self.timeout, read=300.0)
        async with httpx2.AsyncClient(headers=dict(target.headers), timeout=timeout) as http:
            transport = streamable_http_client(target.url, http_client=http)
            async with Client(transport, cache=None) as client:
                yield client

    async def _list_tools(self) -> list[mcp_types.Tool]:
        client = await self._session()
        tools: list[mcp_types.Tool] = []
        cursor: str | None = None
        for _ in range(_MAX_PAGES):
            page = await self._bounded(client.list_tools(cursor=cursor), "listing its tools")
            tools.extend(page.tools)
            cursor = page.next_cursor
            if not cursor:
                return tools
        raise MCPServerError(
            f"MCP server {self.label!r} listed its tools over more than {_MAX_PAGES} pages; "
            "refusing to page on. Check the server's tools/list pagination."
        )

    async def _call_tool(
        self, name: str, arguments: dict[str, Any], meta: dict[str, Any]
    ) -> mcp_types.CallToolResult:
        client = await self._session()
        return await self._bounded(
            client.call_tool(name, arguments, meta=meta),  # type: ignore[arg-type]
            f"calling tool {name!r}",
        )

    async def _bounded(self, work: Coroutine[Any, Any, _T], doing: str) -> _T:
        """Await `work` until it answers, the session ends (its pending requests might
        otherwise wait forever), or the timeout passes."""
        holder = self._holder
        task = asyncio.ensure_future(work)
        waiting: set[asyncio.Future[Any]] = {task} if holder is None else {task, holder}
        done, _ = await asyncio.wait(
            waiting, timeout=self.timeout, return_when=asyncio.FIRST_COMPLETED
        )
        if task in done:
            try:
                return task.result()
            except MCPError as exc:
                if exc.code == mcp_types.CONNECTION_CLOSED:
                    await self._drop()
                    raise MCPConnectionError(self._lost(doing)) from exc
                raise MCPServerError(
                    f"MCP server {self.label!r} answered with error {exc.code} while {doing}: {exc}"
                ) from exc
            except (MCPServerError, asyncio.CancelledError):
                raise
            except Exception as exc:
                await self._drop()
                raise MCPConnectionError(f"{self._lost(doing)} ({_reason(exc)})") from exc
        task.cancel()
        await self._drop()
        if holder is not None and holder in done:
            raise MCPConnectionError(self._lost(doing))
        raise MCPTimeoutError(self._late(f"while {doing}"))

    async def _drop(self) -> None:
        """Close the current session without waiting for it (the next call opens one)."""
        if self._closing is not None:
            self._closing.set()
        self._client = None

    async def _close(self) -> None:
        holder = self._holder
        await self._drop()
        if holder is not None and not holder.done():
            try:
                await asyncio.wait_for(holder, _CLOSE_SECONDS)
            except (TimeoutError, asyncio.CancelledError):
                holder.cancel()

    def _late(self, when: str) -> str:
        return (
            f"MCP server {self.label!r} did not answer {when} (timeout {self.timeout:g}s). "
            "Its session is closed and opens again on the next call; raise the server's "
            "timeout if its tools are slow."
        )

    def _lost(self, doing: str) -> str:
        return (
            f"The connection to MCP server {self.label!r} was lost while {doing} (the server "
            "exited or dropped the connection). It is reconnected on the next call."
        )


def _reason(exc: BaseException) -> str:
    """The innermost useful message of `exc` (transport errors arrive in groups)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


@atexit.register
def _close_all() -> None:
    """Close open sessions at exit: stdio servers are stopped, HTTP sessions ended."""
    for session in list(_SESSIONS):
        if session._client is not None:
            try:
                session.close()
            except Exception:  # pragma: no cover - best effort at interpreter exit
                logger.debug("Could not close %r at exit", session, exc_info=True)


__all__ = ["IDEMPOTENCY_META_KEY", "HTTPTarget", "MCPSession", "StdioTarget"]
