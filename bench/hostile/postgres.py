"""A throwaway Postgres cluster the hostile cases may fault: start, restart in immediate
mode, terminate backends by `application_name`, hold connections, pin xmin.

The machine's own Postgres is shared with other engineers' tests and is never faulted;
every fault here lands on a cluster this process created (`initdb` on a spare loopback
port, data and socket under a fresh temporary directory) and removes again on `stop()`.

    with Cluster.start() as pg:            # initdb + pg_ctl start, max_connections 100
        url = pg.create_database("hostile")  # an empty database; migrate it yourself
        pg.restart()                         # pg_ctl -m immediate restart; waits for accept
        pg.terminate("worker%")              # pg_terminate_backend by application_name
        with pg.hold_connections(20):        # occupy slots until the block ends
            ...
"""

from __future__ import annotations

import contextlib
import glob
import logging
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql

from bench.live.server import free_port

log = logging.getLogger(__name__)

SUPERUSER = "postgres"


def bin_dir() -> Path:
    """The newest installed PostgreSQL's `bin` directory (Debian layout), or `PG_BIN`."""
    if os.environ.get("PG_BIN"):
        return Path(os.environ["PG_BIN"])
    found = sorted(
        glob.glob("/usr/lib/postgresql/*/bin/initdb"),
        key=lambda p: int(Path(p).parts[-3]) if Path(p).parts[-3].isdigit() else 0,
    )
    if not found:
        raise RuntimeError("no initdb under /usr/lib/postgresql/*/bin (set PG_BIN)")
    return Path(found[-1]).parent


def unavailable_reason() -> str | None:
    """Why a throwaway cluster cannot be started here, or `None`."""
    try:
        bin_dir()
    except RuntimeError as exc:
        return str(exc)
    if os.geteuid() == 0 and _system_user() is None:
        return "running as root and no `postgres` system user to run initdb as"
    return None


def _system_user() -> str | None:
    """Who runs the server: this user, or (as root, which initdb refuses) `postgres`."""
    if os.geteuid() != 0:
        return None
    import pwd

    try:
        return pwd.getpwnam(os.environ.get("PG_SYSTEM_USER", "postgres")).pw_name
    except KeyError:
        return None


class Cluster:
    """One throwaway cluster on 127.0.0.1:`port` until `stop()`."""

    def __init__(self, root: Path, port: int, settings: dict[str, Any]) -> None:
        self.root = root
        self.data = root / "data"
        self.port = port
        self.settings = settings
        self.bin = bin_dir()
        self.log_file = root / "postgres.log"

    # -- lifecycle ----------------------------------------------------------------------

    @classmethod
    def start(cls, *, max_connections: int = 100, **settings: Any) -> Cluster:
        """initdb a new cluster and start it; extra keyword arguments are server settings
        (`postgresql.conf` names, e.g. `autovacuum_naptime="1s"`)."""
        root = Path(tempfile.mkdtemp(prefix="bw-hostile-pg-"))
        if (owner := _system_user()) is not None:
            shutil.chown(root, owner, owner)
        cluster = cls(root, free_port(), {"max_connections": max_connections, **settings})
        try:
            cluster._initdb()
            cluster._ctl("start", "-l", str(cluster.log_file))
            cluster.wait_ready()
        except BaseException:
            cluster.stop()
            raise
        log.info("throwaway Postgres on port %d (%s)", cluster.port, root)
        return cluster

    def _as_owner(self, command: list[str], timeout: float) -> None:
        subprocess.run(
            command, check=True, capture_output=True, timeout=timeout, user=_system_user()
        )

    def _initdb(self) -> None:
        self._as_owner(
            [
                str(self.bin / "initdb"),
                "-D",
                str(self.data),
                "-U",
                SUPERUSER,
                "--auth=trust",
                "--no-sync",
                "-E",
                "UTF8",
                "--locale=C",
            ],
            120,
        )
        conf = {
            "listen_addresses": "'127.0.0.1'",
            "port": str(self.port),
            "unix_socket_directories": f"'{self.root}'",
            # fsync off is safe here: an immediate restart kills processes, not the
            # machine, so the OS page cache survives. synchronous_commit stays on: off, a
            # crash loses commits already acknowledged (a decision answered 200, gone).
            "fsync": "off",
            "full_page_writes": "off",
            "shared_buffers": "'64MB'",
            "log_min_messages": "warning",
            **{k: (f"'{v}'" if isinstance(v, str) else str(v)) for k, v in self.settings.items()},
        }
        with (self.data / "postgresql.conf").open("a") as out:
            out.write("\n# bench.hostile throwaway cluster\n")
            for key, value in conf.items():
                out.write(f"{key} = {value}\n")

    def _ctl(self, *args: str, timeout: float = 120) -> None:
        self._as_owner(
            [str(self.bin / "pg_ctl"), "-D", str(self.data), "-w", "-t", "60", *args], timeout
        )

    def restart(self) -> float:
        """`pg_ctl -m immediate restart` (a crash: no checkpoint, every backend killed);
        returns the monotonic time at which the server accepted connections again."""
        self._ctl("restart", "-m", "immediate", "-l", str(self.log_file))
        return self.wait_ready()

    def stop_server(self, mode: str = "immediate") -> None:
        """Stop the server but keep the data (start it again with `start_server`)."""
        self._ctl("stop", "-m", mode)

    def start_server(self) -> float:
        self._ctl("start", "-l", str(self.log_file))
        return self.wait_ready()

    def wait_ready(self, timeout: float = 60.0) -> float:
        """Wait until a query succeeds; the monotonic time it did."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                with psycopg.connect(self.url(), autocommit=True, connect_timeout=2) as conn:
                    conn.execute("SELECT 1")
                return time.monotonic()
            except psycopg.OperationalError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)

    def stop(self) -> None:
        """Stop the server (immediately) and delete its files. Safe to call twice."""
        if (self.data / "postmaster.pid").exists():
            with contextlib.suppress(Exception):
                self._ctl("stop", "-m", "immediate", timeout=60)
        shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> Cluster:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    # -- connections --------------------------------------------------------------------

    def url(self, database: str = "postgres", user: str = SUPERUSER) -> str:
        return f"postgresql://{user}@127.0.0.1:{self.port}/{database}"

    def connect(self, database: str = "postgres", **kwargs: Any) -> psycopg.Connection[Any]:
        kwargs.setdefault("autocommit", True)
        kwargs.setdefault("connect_timeout", 5)
        return psycopg.connect(self.url(database), **kwargs)

    def query(self, text: str, *params: Any, database: str = "postgres") -> list[tuple[Any, ...]]:
        with self.connect(database) as conn:
            cursor = conn.execute(text, params or None)
            return cursor.fetchall() if cursor.description else []

    def create_database(self, name: str) -> str:
        """A new empty database; its URL."""
        with self.connect() as conn:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        return self.url(name)

    def create_role(self, name: str, *, superuser: bool = False) -> None:
        with self.connect() as conn:
            conn.execute(
                sql.SQL("CREATE ROLE {} LOGIN {}").format(
                    sql.Identifier(name), sql.SQL("SUPERUSER" if superuser else "NOSUPERUSER")
                )
            )

    # -- faults -------------------------------------------------------------------------

    def terminate(self, application_name: str) -> int:
        """`pg_terminate_backend` every backend whose `application_name` is LIKE the
        pattern (this connection excluded); how many were terminated."""
        with self.connect() as conn:
            rows = conn.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE application_name LIKE %s AND pid <> pg_backend_pid()",
                (application_name,),
            ).fetchall()
        return sum(1 for (done,) in rows if done)

    def backends(self, application_name: str = "%") -> int:
        rows = self.query(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name LIKE %s "
            "AND backend_type = 'client backend'",
            application_name,
        )
        return int(rows[0][0])

    def free_slots(self) -> int:
        """Connection slots left for ordinary (non-superuser) roles."""
        rows = self.query(
            "SELECT current_setting('max_connections')::int "
            "- current_setting('superuser_reserved_connections')::int "
            "- (SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend')"
        )
        return int(rows[0][0])

    @contextlib.contextmanager
    def hold_connections(
        self, count: int | None = None, *, database: str = "postgres", user: str = "hog"
    ) -> Iterator[list[psycopg.Connection[Any]]]:
        """Open idle connections as `user` (created on first use, not a superuser, so
        the superuser slots stay free for the harness) until `count` are open or the
        server refuses more (`None`: until refused, at most 1,000); closed on exit.
        `top_up(held)` takes the slots freed since (e.g. by `terminate`)."""
        if not self.query("SELECT 1 FROM pg_roles WHERE rolname = %s", user):
            self.create_role(user)
        held: list[psycopg.Connection[Any]] = []
        try:
            self.top_up(held, count, database=database, user=user)
            yield held
        finally:
            for conn in held:
                with contextlib.suppress(Exception):
                    conn.close()

    def top_up(
        self,
        held: list[psycopg.Connection[Any]],
        count: int | None = None,
        *,
        database: str = "postgres",
        user: str = "hog",
    ) -> int:
        """Open connections into `held` (see `hold_connections`); how many were added."""
        limit, before = (1000 if count is None else count), len(held)
        while len(held) < limit:
            try:
                held.append(
                    psycopg.connect(
                        self.url(database, user),
                        autocommit=True,
                        connect_timeout=5,
                        application_name="hog",
                    )
                )
            except psycopg.OperationalError:
                if count is not None:
                    raise
                break
        return len(held) - before

    @contextlib.contextmanager
    def pinned_xmin(self, database: str) -> Iterator[int]:
        """`BEGIN; SELECT txid_current();` held open until the block ends: no row
        version newer than this transaction can be vacuumed away meanwhile."""
        conn = psycopg.connect(self.url(database), application_name="xmin-pin")
        try:
            txid = int(conn.execute("SELECT txid_current()").fetchone()[0])
            yield txid
        finally:
            with contextlib.suppress(Exception):
                conn.rollback()
            conn.close()

    def dead_tuples(self, database: str, tables: tuple[str, ...]) -> dict[str, int]:
        """`n_dead_tup` of each table (the statistics collector's view, refreshed)."""
        with self.connect(database) as conn:
            conn.execute("SELECT pg_stat_clear_snapshot()")
            rows = conn.execute(
                "SELECT relname, n_dead_tup FROM pg_stat_user_tables WHERE relname = ANY(%s)",
                (list(tables),),
            ).fetchall()
        return {name: int(dead) for name, dead in rows}

    def start_time(self) -> Any:
        return self.query("SELECT pg_postmaster_start_time()")[0][0]


__all__ = ["SUPERUSER", "Cluster", "bin_dir", "unavailable_reason"]
