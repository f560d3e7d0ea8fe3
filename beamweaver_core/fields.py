"""Model fields."""

from __future__ import annotations

import json
from typing import Any

from django.db import models


class ExactJSONField(models.TextField[Any, Any]):  # JSON values, set and got
    """JSON kept as text, byte for byte.

    Postgres `jsonb` rewrites numbers (`1e16` comes back as an integer, `-0.0` as `0.0`), so
    values that must round-trip exactly (run inputs, resume answers) are stored as text.
    """

    description = "JSON stored as exact text"
    # What the django-stubs plugin reads as the field's Python type (any JSON value).
    _pyi_private_set_type: Any
    _pyi_private_get_type: Any

    def from_db_value(self, value: Any, expression: Any, connection: Any) -> Any:
        return None if value is None else json.loads(value)

    def to_python(self, value: Any) -> Any:
        if isinstance(value, str):
            try:
                return json.loads(value)
            except json.JSONDecodeError:
                return value
        return value

    def get_prep_value(self, value: Any) -> Any:
        if value is None:
            return None
        return json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))

    def value_to_string(self, obj: Any) -> str:
        return str(self.get_prep_value(self.value_from_object(obj)))
