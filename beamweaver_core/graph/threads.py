"""The threads tasks run on: a shared pool for sync nodes, and async nodes from sync code.

Sync nodes of one step run concurrently on a shared pool of worker threads (each task with
a copy of the caller's context); a nested graph inside a pooled task gets a private pool,
so a full shared pool can never wait on itself.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import threading
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar

_T = TypeVar("_T")

_pool: concurrent.futures.ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()
_in_pool = threading.local()


def _mark_pool_thread() -> None:
    _in_pool.active = True


def _shared_pool() -> concurrent.futures.ThreadPoolExecutor:
    global _pool
    if _pool is None:
        with _pool_lock:
            if _pool is None:
                _pool = concurrent.futures.ThreadPoolExecutor(
                    max_workers=32,
                    thread_name_prefix="beamweaver-task",
                    initializer=_mark_pool_thread,
                )
    return _pool


_thread_cleanups: list[Callable[[], None]] = []


def register_thread_cleanup(fn: Callable[[], None]) -> None:
    """Run `fn` on a worker thread after each task it ran (e.g. give back a pooled
    database connection the task's thread checked out)."""
    if fn not in _thread_cleanups:
        _thread_cleanups.append(fn)


def cleaned(call: Callable[[], _T]) -> Callable[[], _T]:
    if not _thread_cleanups:
        return call

    def run() -> _T:
        try:
            return call()
        finally:
            for cleanup in _thread_cleanups:
                cleanup()

    return run


async def in_thread(call: Callable[[], _T]) -> _T:
    """`call` on asyncio's default executor with the thread cleanups after it, as every
    task call gets: an async run's blocking checkpointer otherwise kept a pooled database
    connection checked out by each executor thread it used."""
    return await asyncio.to_thread(cleaned(call))


def run_concurrently(
    calls: Sequence[Callable[[], _T]],
    on_progress: Callable[[list[_T]], None] | None = None,
) -> list[_T]:
    """Run task calls on worker threads (each with a copy of the caller's context); the
    results in call order.

    `on_progress(results)` is called on the calling thread with the results that came in
    while other calls still run (each result once); the results still running go on
    meanwhile. If it raises, the error is raised once every call has finished."""
    if len(calls) == 1:
        return [calls[0]()]
    calls = [cleaned(c) for c in calls]
    if getattr(_in_pool, "active", False):
        # A nested graph inside a pooled task: a private pool, so a full shared pool
        # can never wait on itself.
        with concurrent.futures.ThreadPoolExecutor(max_workers=len(calls)) as private:
            futures = [private.submit(contextvars.copy_context().run, c) for c in calls]
            return _collect(futures, on_progress)
    pool = _shared_pool()
    futures = [pool.submit(contextvars.copy_context().run, c) for c in calls]
    return _collect(futures, on_progress)


def _collect(
    futures: list[concurrent.futures.Future[_T]],
    on_progress: Callable[[list[_T]], None] | None,
) -> list[_T]:
    error: BaseException | None = None
    pending = set(futures)
    while pending and on_progress is not None and error is None:
        done, pending = concurrent.futures.wait(
            pending, return_when=concurrent.futures.FIRST_COMPLETED
        )
        if pending:
            try:
                on_progress([f.result() for f in futures if f in done])
            except BaseException as exc:  # re-raised once every call has finished
                error = exc
    results = [f.result() for f in futures]
    if error is not None:
        raise error
    return results


def run_coroutine_blocking(coro: Awaitable[Any]) -> Any:
    """Run an async node from synchronous code (on a fresh event loop)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(_await(coro))
    context = contextvars.copy_context()
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as one:
        return one.submit(context.run, asyncio.run, _await(coro)).result()


async def _await(awaitable: Awaitable[Any]) -> Any:
    return await awaitable


__all__ = [
    "cleaned",
    "in_thread",
    "register_thread_cleanup",
    "run_concurrently",
    "run_coroutine_blocking",
]
