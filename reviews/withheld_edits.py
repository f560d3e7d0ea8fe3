"""Edits around withheld secrets: a reviewer who may not reveal secrets sees arguments
redacted (`beamweaver_core.redaction`), whole values as `[redacted]` and secrets inside
text replaced by it. What they leave as shown keeps its original value; a value they
changed that still holds the placeholder would store its text in place of the secret, so
it is refused. One rule for every way a decision arrives (the item page's fields and JSON,
the review API, `/lg`): `reviews.answers.validate` applies it to every edit."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from beamweaver_core.redaction import REDACTED

MISSING: Any = object()
"""No value (an argument absent from the original, or an input left out of a post)."""


def restore_withheld(edited: Any, shown: Any, original: Any) -> Any:
    """`edited` with what the reviewer left as they were shown it put back to the
    original: a value (at any depth) equal to its `shown` one, redacted in whole or in
    part, and a value still reading `[redacted]`."""
    if original is MISSING:
        return edited
    if shown is not MISSING and _json_text(edited) == _json_text(shown):
        return original
    if edited == REDACTED and original != REDACTED:
        return original
    if isinstance(edited, dict) and isinstance(original, Mapping):
        fields = shown if isinstance(shown, Mapping) else {}
        return {
            k: restore_withheld(v, fields.get(k, MISSING), original.get(k, MISSING))
            for k, v in edited.items()
        }
    if isinstance(edited, list) and isinstance(original, list) and len(edited) == len(original):
        items = shown if isinstance(shown, list) and len(shown) == len(edited) else None
        return [
            restore_withheld(e, MISSING if items is None else items[i], o)
            for i, (e, o) in enumerate(zip(edited, original, strict=True))
        ]
    return edited


def placeholders_added(edited: Any, original: Any) -> bool:
    """Whether `edited` (restored) holds `[redacted]` more often than `original` did: a
    changed value around a withheld secret, which would store the placeholder's text."""
    before = 0 if original is MISSING else _json_text(original).count(REDACTED)
    return _json_text(edited).count(REDACTED) > before


def _json_text(value: Any) -> str:
    # NaN and infinities are the parser's to refuse; here they only compare.
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


__all__ = ["MISSING", "placeholders_added", "restore_withheld"]
