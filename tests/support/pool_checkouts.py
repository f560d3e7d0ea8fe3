"""Who holds a pooled database connection: the tests' check that every one is given back.

A connection taken from psycopg_pool stays "in use" until someone puts it back. A thread
that ends while it holds one can never do that: the pool counts the slot as taken for
good, and the connection's backend stays connected to the test database until the garbage
collector happens to finalize it. At the end of the session the test database's drop then
found it "being accessed by other users", in some runs only (whether a collection had
run by then). `CheckoutLedger` records every checkout with its thread and the stack that
took it, so the fixtures in tests/conftest.py can name the owner of a connection nobody
gave back.
"""

from __future__ import annotations

import sys
import threading
import traceback
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from types import FrameType
from typing import Any

import pytest
from psycopg_pool import ConnectionPool


@dataclass(frozen=True, slots=True)
class Checkout:
    """One connection taken from a pool: by which thread, where."""

    connection: weakref.ReferenceType[Any]
    thread: threading.Thread
    stack: traceback.StackSummary

    def describe(self) -> str:
        conn = self.connection()
        state = "collected since" if conn is None else ("closed" if conn.closed else "open")
        alive = "running" if self.thread.is_alive() else "ended"
        return (
            f"taken by thread {self.thread.name!r} ({alive}; the connection is {state}) at:\n"
            + "".join(self.stack.format())
        )


class CheckoutLedger:
    """Every connection checked out of any `ConnectionPool` of this process (while
    `recording`), until it is given back."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._held: dict[int, Checkout] = {}
        self._lost: list[Checkout] = []

    def taken(self, conn: Any, caller: FrameType | None = None) -> None:
        """Record that the current thread took `conn`, at `caller` (the frame that asked the
        pool; by default the caller of this method)."""
        stack = traceback.StackSummary.extract(
            traceback.walk_stack(caller or sys._getframe(1)), limit=60, lookup_lines=False
        )
        stack.reverse()
        checkout = Checkout(weakref.ref(conn), threading.current_thread(), stack)
        with self._lock:
            earlier = self._held.get(id(conn))
            if earlier is not None and earlier.connection() is not conn:
                # Collected without being given back, and its address reused.
                self._lost.append(earlier)
            self._held[id(conn)] = checkout

    def given_back(self, conn: Any) -> None:
        with self._lock:
            held = self._held.get(id(conn))
            if held is not None and held.connection() is conn:
                del self._held[id(conn)]

    def orphaned(self) -> list[Checkout]:
        """The checkouts whose thread has ended (nobody can give them back any more),
        each reported once."""
        with self._lock:
            found, self._lost = self._lost, []
            for key, checkout in list(self._held.items()):
                if not checkout.thread.is_alive():
                    found.append(checkout)
                    del self._held[key]
        return found

    def held_outside(self, thread: threading.Thread) -> list[Checkout]:
        """The checkouts of running threads other than `thread`."""
        with self._lock:
            return [
                c for c in self._held.values() if c.thread is not thread and c.thread.is_alive()
            ]

    @contextmanager
    def recording(self) -> Iterator[CheckoutLedger]:
        """Record the checkouts of every pool (psycopg_pool's own methods, so subclasses
        such as `CheckedPool` and pools replaced by a settings change are included)."""
        getconn, putconn = ConnectionPool.getconn, ConnectionPool.putconn

        def recorded_getconn(pool: ConnectionPool, timeout: float | None = None) -> Any:
            conn = getconn(pool, timeout)
            self.taken(conn, sys._getframe(1))
            return conn

        def recorded_putconn(pool: ConnectionPool, conn: Any) -> None:
            self.given_back(conn)
            putconn(pool, conn)

        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(ConnectionPool, "getconn", recorded_getconn)
            patch.setattr(ConnectionPool, "putconn", recorded_putconn)
            yield self


def report(checkouts: list[Checkout], what: str) -> str:
    """A failure message: `what`, then each checkout's owner and stack."""
    return f"{what}:\n\n" + "\n".join(c.describe() for c in checkouts)


__all__ = ["Checkout", "CheckoutLedger", "report"]
