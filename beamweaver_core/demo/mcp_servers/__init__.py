"""The demo's example MCP servers, run as scripts by path (they need only the `mcp` SDK):
`files_server.py` over stdio and `tickets_server.py` over streamable HTTP."""

from __future__ import annotations

from pathlib import Path

FILES_SERVER = Path(__file__).resolve().parent / "files_server.py"
TICKETS_SERVER = Path(__file__).resolve().parent / "tickets_server.py"

__all__ = ["FILES_SERVER", "TICKETS_SERVER"]
