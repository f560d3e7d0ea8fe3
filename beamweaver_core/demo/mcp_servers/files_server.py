"""An example MCP server over stdio: a small in-memory file tree of a web shop's host.

Started by the demo's workers (`BEAMWEAVER["MCP_SERVERS"]["demo_files"]`), one process per
worker process. A call whose idempotency key (request `_meta`) was seen before returns the
first answer instead of acting again.
"""

from __future__ import annotations

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError

IDEMPOTENCY_META_KEY = "beamweaver/idempotency-key"

FILES = {
    "/logs/app.log": "12:00 checkout ok\n12:05 checkout ok\n",
    "/logs/debug-old.log": "debug output from last month, 2.1 GB\n",
    "/logs/export.log": "02:00 nightly export FAILED: disk full\n",
    "/etc/shop.conf": "currency = EUR\nworkers = 4\n",
}
_answers: dict[str, str] = {}

server = MCPServer("demo-files", instructions="Read and tidy the shop host's files.")


@server.tool()
def list_files(directory: str = "/") -> list[str]:
    """List the files under a directory (e.g. /logs)."""
    prefix = directory.rstrip("/") + "/"
    return sorted(path for path in FILES if path.startswith(prefix))


@server.tool()
def read_file(path: str) -> str:
    """Read a text file."""
    if path not in FILES:
        raise ToolError(f"There is no file {path}.")
    return FILES[path]


@server.tool()
def delete_file(path: str, ctx: Context) -> str:
    """Delete a file permanently. Needs human approval."""
    meta_key = (ctx.request_context.meta or {}).get(IDEMPOTENCY_META_KEY)
    key = meta_key if isinstance(meta_key, str) else ""
    if key in _answers:
        return _answers[key]
    if path not in FILES:
        raise ToolError(f"There is no file {path}.")
    del FILES[path]
    answer = f"Deleted {path}."
    if key:
        _answers[key] = answer
    return answer


if __name__ == "__main__":
    server.run()
