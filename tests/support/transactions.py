"""Counting the transactions a piece of code commits, from the client side.

A statement run while the connection is in autocommit mode is a transaction of its own;
otherwise a transaction ends with the connection's `commit()`. Both are seen at the
psycopg level, so statements of the checkpointer's own cursors count as well as Django's.
Only the calling thread is counted (the pool's and other threads' work is not ours).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import psycopg


@dataclass
class Transactions:
    """What the counted code sent: each autocommit statement, each explicit commit (with
    the statements it covered), in order."""

    autocommit: list[str] = field(default_factory=list)
    commits: list[list[str]] = field(default_factory=list)
    _open: list[str] = field(default_factory=list)

    @property
    def committed(self) -> int:
        return len(self.autocommit) + len(self.commits)

    @property
    def statements(self) -> list[str]:
        """Every statement sent, on its own or in a transaction (committed or still open)."""
        return [
            *self.autocommit,
            *(s for statements in self.commits for s in statements),
            *self._open,
        ]

    @property
    def reads(self) -> list[str]:
        """Transactions that only read (autocommit SELECTs, commits of only SELECTs)."""
        reads = [s for s in self.autocommit if s.upper().startswith("SELECT")]
        for statements in self.commits:
            if all(s.upper().startswith("SELECT") for s in statements):
                reads.append(" ; ".join(statements) or "(empty transaction)")
        return reads


def _text(cursor: Any, query: Any) -> str:
    if isinstance(query, bytes):
        return query.decode().strip()
    if isinstance(query, str):
        return query.strip()
    return str(query.as_string(cursor)).strip()


@contextlib.contextmanager
def counting_transactions() -> Iterator[Transactions]:
    counted = Transactions()
    me = threading.get_ident()
    real_execute = psycopg.Cursor.execute
    real_commit = psycopg.Connection.commit

    def execute(self: Any, query: Any, params: Any = None, **kwargs: Any) -> Any:
        if threading.get_ident() == me:
            text = _text(self, query)
            if self.connection.autocommit:
                counted.autocommit.append(text)
            elif not text.upper().startswith(("SAVEPOINT", "RELEASE SAVEPOINT")):
                counted._open.append(text)
        return real_execute(self, query, params, **kwargs)

    def commit(self: Any) -> Any:
        if threading.get_ident() == me:
            counted.commits.append(counted._open)
            counted._open = []
        return real_commit(self)

    psycopg.Cursor.execute = execute  # type: ignore[method-assign]
    psycopg.Connection.commit = commit  # type: ignore[method-assign]
    try:
        yield counted
    finally:
        psycopg.Cursor.execute = real_execute  # type: ignore[method-assign]
        psycopg.Connection.commit = real_commit  # type: ignore[method-assign]
