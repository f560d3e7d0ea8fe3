"""The readiness checks behind `/readyz`: the database answers, the channel layer
answers, and every migration is applied. Each check returns `None` when it passes, else
a short reason for the log (the endpoint itself says only which check failed: it is
unauthenticated, and a database error names hosts).

Cheap: one `SELECT 1`, one `group_send` to a group nobody is in, and the migration plan,
which is computed until it is empty once and then taken as settled for the process (a
process runs the code it started with; a new release starts new processes).
"""

from __future__ import annotations

import asyncio

from channels.layers import get_channel_layer
from django.db import DEFAULT_DB_ALIAS, connections
from django.db.migrations.executor import MigrationExecutor

CHANNEL_TIMEOUT = 2.0
READY_GROUP = "beamweaver.readyz"
_migrated: set[str] = set()


def database_problem(alias: str = DEFAULT_DB_ALIAS) -> str | None:
    """Whether the database answers a query."""
    try:
        with connections[alias].cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
    except Exception as exc:
        return f"{type(exc).__name__}: {exc}"
    return None


def migrations_problem(alias: str = DEFAULT_DB_ALIAS) -> str | None:
    """Whether every migration of the installed apps is applied."""
    if alias in _migrated:
        return None
    try:
        executor = MigrationExecutor(connections[alias])
        plan = executor.migration_plan(executor.loader.graph.leaf_nodes())
    except Exception as exc:
        return f"{type(exc).__name__}: {exc}"
    if plan:
        names = ", ".join(f"{m.app_label}.{m.name}" for m, _ in plan[:5])
        return f"{len(plan)} migration(s) not applied ({names}); run manage.py migrate"
    _migrated.add(alias)
    return None


async def channel_layer_problem() -> str | None:
    """Whether the channel layer takes a message (Redis reachable)."""
    layer = get_channel_layer()
    if layer is None:
        return "CHANNEL_LAYERS has no default layer"
    try:
        await asyncio.wait_for(
            layer.group_send(READY_GROUP, {"type": "readyz.ping"}), CHANNEL_TIMEOUT
        )
    except Exception as exc:
        return f"{type(exc).__name__}: {exc}"
    return None


__all__ = ["channel_layer_problem", "database_problem", "migrations_problem"]
