"""The review policies in force, compiled once per change rather than once per item.

Reading the admin's policies with their groups and users and compiling them with the
settings' ones cost 9 % of an interrupt's server CPU (issue 16). The database keeps a
generation that its triggers rewrite whenever a policy, or a name one depends on, changes
(migration `0009_policy_generation`), in the transaction that makes the change; reading
it is one statement on a one-row table, so a process may reuse what it compiled until
the generation it reads differs, and a change committed by any other process (the admin,
a shell, a migration) is seen by the next interrupt. The settings are part of the key
because `override_settings` changes them without the database knowing.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from django.db import connections

T = TypeVar("T")

GENERATION = "SELECT generation FROM bw_review_policy_generation"

_COMPILED: dict[str, tuple[int | None, list[Any], Any]] = {}
"""Per database alias: the generation and settings compiled, and what they compiled to."""


def generation(using: str) -> int | None:
    """The generation in force for this connection (None: no change since a flush)."""
    with connections[using].cursor() as cursor:
        cursor.execute(GENERATION)
        row = cursor.fetchone()
    return None if row is None else int(row[0])


def compiled(using: str, settings: Sequence[Any], build: Callable[[], T]) -> T:
    """`build()`, called again only when the generation or `settings` changed.

    The generation is read before `build()` reads the rows: a change committed between
    the two is then compiled under the older generation, which the next call no longer
    matches, never the other way round."""
    key = generation(using)
    written = list(settings)
    found = _COMPILED.get(using)
    if found is not None and found[0] == key and found[1] == written:
        result: T = found[2]
        return result
    result = build()
    # A deep copy: a change of the settings' dicts in place must not alter the key.
    _COMPILED[using] = (key, copy.deepcopy(written), result)
    return result


__all__ = ["compiled", "generation"]
