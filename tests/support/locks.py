"""Racing a request against a transaction that holds row locks: the transaction runs on
another thread's connection and stays open until the request waits for one of its locks,
so the test sees what the request does once it gets the lock (and never guesses a delay).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator

from django.db import connection, connections

from tests.support.waiting import wait_for

HOLD_SECONDS = 10.0
"""How long a holder waits for the request at most; the test's assertions then tell."""


def waiting_for_a_lock(statement_like: str) -> bool:
    """Whether one backend waits for a row lock while running a statement `LIKE
    statement_like` (e.g. `"%bw_thread%FOR UPDATE%"`)."""
    with connection.cursor() as cursor:
        # Asked inside the holder's transaction, which would otherwise keep reading the
        # statistics snapshot its first look took (and so wait out its time every time).
        cursor.execute("SELECT pg_stat_clear_snapshot()")
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
            "AND query LIKE %s",
            [statement_like],
        )
        return cursor.fetchone() == (1,)


@contextlib.contextmanager
def held_meanwhile(
    take: Callable[[Callable[[], None]], None], until_waiting: str
) -> Iterator[None]:
    """Run the body while another thread's transaction holds locks.

    `take(held)` runs on that thread's own connection: it takes its locks in a transaction
    and calls `held()` inside it, which starts the body and returns once a backend waits
    for a lock on a statement `LIKE until_waiting` (or after `HOLD_SECONDS`); `take` then
    ends its transaction. The body's request runs in the test's thread. An error `take`
    raised is raised again once the body ends."""
    holding, failures = threading.Event(), []

    def held() -> None:
        holding.set()
        with contextlib.suppress(AssertionError):
            wait_for(lambda: waiting_for_a_lock(until_waiting), timeout=HOLD_SECONDS)

    def run() -> None:
        try:
            take(held)
        except BaseException as error:  # raised again below, in the test's thread
            failures.append(error)
        finally:
            holding.set()
            connections.close_all()

    holder = threading.Thread(target=run)
    holder.start()
    try:
        holding.wait(HOLD_SECONDS)
        yield
    finally:
        holder.join(HOLD_SECONDS + 5)
    if failures:
        raise failures[0]


__all__ = ["HOLD_SECONDS", "held_meanwhile", "waiting_for_a_lock"]
