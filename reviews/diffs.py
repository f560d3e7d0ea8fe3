"""Field-level differences between proposed and edited tool arguments.

A value the redaction policy withholds (a credential under a secret name, see
`beamweaver_core.redaction`) is given as `[redacted]`, so neither the preview nor the
audit log repeats a secret the reviewer replaced; credential-shaped text inside other
values is redacted where the diff is shown."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from beamweaver_core.redaction import REDACTED, is_credential, is_secret_key
from reviews.payloads import canonical

_MISSING = object()


def args_diff(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Each changed field as `{"field", "change", "before", "after"}` (values as canonical
    JSON, `None` when absent), descending into nested objects; sorted by field path."""
    changes: list[dict[str, Any]] = []
    _walk(before, after, "", changes)
    return sorted(changes, key=lambda c: c["field"])


def _shown(key: str, value: Any) -> str:
    return REDACTED if is_secret_key(key) and is_credential(value) else canonical(value)


def _walk(before: Any, after: Any, path: str, out: list[dict[str, Any]], key: str = "") -> None:
    if isinstance(before, Mapping) and isinstance(after, Mapping):
        for name in sorted(set(before) | set(after)):
            _walk(
                before.get(name, _MISSING),
                after.get(name, _MISSING),
                f"{path}.{name}" if path else str(name),
                out,
                str(name),
            )
        return
    if before is _MISSING and after is _MISSING:
        return
    if before is _MISSING:
        out.append({"field": path, "change": "added", "before": None, "after": _shown(key, after)})
    elif after is _MISSING:
        out.append(
            {"field": path, "change": "removed", "before": _shown(key, before), "after": None}
        )
    elif canonical(before) != canonical(after):
        out.append(
            {
                "field": path,
                "change": "changed",
                "before": _shown(key, before),
                "after": _shown(key, after),
            }
        )


__all__ = ["args_diff"]
