"""The one canonical JSON form of tool arguments.

Review descriptions, idempotency keys and anything that compares or hashes arguments use
`canonical_json`, so equal arguments always print and hash the same way.
"""

from __future__ import annotations

import json
from typing import Any


def canonical_json(value: Any) -> str:
    """`value` as JSON with sorted keys, `", "` / `": "` separators and no indentation."""
    return json.dumps(value, sort_keys=True, ensure_ascii=False, allow_nan=False)


__all__ = ["canonical_json"]
