"""Postgres from the async views: a sync function run in a worker thread, with Django's
connection handling around it (channels' `database_sync_to_async`, typed)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import ParamSpec, TypeVar, cast

from channels.db import database_sync_to_async

P = ParamSpec("P")
T = TypeVar("T")


def in_thread(fn: Callable[P, T]) -> Callable[P, Awaitable[T]]:
    """`fn` as a coroutine function running in a thread that may use the ORM."""
    return cast("Callable[P, Awaitable[T]]", database_sync_to_async(fn))


__all__ = ["in_thread"]
