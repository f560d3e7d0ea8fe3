"""Field-level differences between proposed and edited tool arguments."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from reviews.payloads import canonical

_MISSING = object()


def args_diff(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Each changed field as `{"field", "change", "before", "after"}` (values as canonical
    JSON, `None` when absent), descending into nested objects; sorted by field path."""
    changes: list[dict[str, Any]] = []
    _walk(before, after, "", changes)
    return sorted(changes, key=lambda c: c["field"])


def _walk(before: Any, after: Any, path: str, out: list[dict[str, Any]]) -> None:
    if isinstance(before, Mapping) and isinstance(after, Mapping):
        for key in sorted(set(before) | set(after)):
            _walk(
                before.get(key, _MISSING),
                after.get(key, _MISSING),
                f"{path}.{key}" if path else str(key),
                out,
            )
        return
    if before is _MISSING and after is _MISSING:
        return
    if before is _MISSING:
        out.append({"field": path, "change": "added", "before": None, "after": canonical(after)})
    elif after is _MISSING:
        out.append({"field": path, "change": "removed", "before": canonical(before), "after": None})
    elif canonical(before) != canonical(after):
        out.append(
            {
                "field": path,
                "change": "changed",
                "before": canonical(before),
                "after": canonical(after),
            }
        )


__all__ = ["args_diff"]
