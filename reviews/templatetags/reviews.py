"""Template filters for showing untrusted text honestly.

`visible` escapes text and turns every invisible or direction-changing character (control
characters, bidi overrides, zero-width characters, other Unicode format characters) into
a visible marker such as `[U+202E]`, so that what the reviewer reads is what executes.
Both `visible` and `pretty_json` redact secret-shaped values (`beamweaver_core.redaction`):
untrusted text can carry credentials, wherever a template shows it.
"""

from __future__ import annotations

import json
import unicodedata
from datetime import datetime
from typing import Any

from django import template
from django.conf import settings
from django.utils import timezone
from django.utils.html import conditional_escape, format_html
from django.utils.safestring import SafeString, mark_safe

from beamweaver_core.redaction import redact, redact_text
from reviews import analytics

register = template.Library()


@register.simple_tag
def live_poll() -> str:
    """The `hx-trigger` of a page's catch-up poll (`BEAMWEAVER["LIVE_POLL_SECONDS"]`)."""
    seconds = float(settings.BEAMWEAVER.get("LIVE_POLL_SECONDS", 20))
    return f"every {max(100, round(seconds * 1000))}ms"


_KEEP = {"\n", "\t"}
_INVISIBLE_CATEGORIES = {"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"}


def is_invisible(char: str) -> bool:
    """Whether `char` is a control, format (bidi, zero-width) or unassigned character."""
    if char in _KEEP:
        return False
    if unicodedata.category(char) in _INVISIBLE_CATEGORIES:
        return True
    return char in "\u115f\u1160\u3164\uffa0"  # Hangul fillers render as blanks


@register.filter
def visible(value: Any) -> SafeString:
    """Escaped, redacted text with invisible characters shown as `[U+XXXX]` markers."""
    text = "" if value is None else redact_text(str(value))
    parts: list[str] = []
    start = 0
    for index, char in enumerate(text):
        if is_invisible(char):
            parts.append(conditional_escape(text[start:index]))
            code = f"U+{ord(char):04X}"
            name = unicodedata.name(char, "control character")
            parts.append(format_html('<mark class="ctl" title="{}">[{}]</mark>', name, code))
            start = index + 1
    parts.append(conditional_escape(text[start:]))
    return mark_safe("".join(parts))  # every part was escaped above


@register.filter
def has_invisible(value: Any) -> bool:
    text = "" if value is None else str(value)
    return any(is_invisible(c) for c in text)


@register.filter
def pretty_json(value: Any) -> str:
    """Indented, redacted JSON with sorted keys (plain text: escape it with `visible`)."""
    return json.dumps(redact(value), indent=2, sort_keys=True, ensure_ascii=False, default=repr)


@register.filter
def is_text(value: Any) -> bool:
    return isinstance(value, str)


@register.filter
def tail(value: Any, count: int = 300) -> str:
    text = "" if value is None else str(value)
    return text[-int(count) :]


@register.filter
def age(value: datetime | None) -> str:
    """A compact age: `45s`, `12m`, `3h`, `2d`."""
    if value is None:
        return ""
    seconds = max(0, int((timezone.now() - value).total_seconds()))
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


@register.filter
def duration(seconds: Any) -> str:
    """A compact duration of a number of seconds: `45s`, `12m`, `3.5h`, `2.1d`."""
    return analytics.duration(seconds)


@register.filter
def sorted_items(value: Any) -> list[tuple[str, Any]]:
    if not isinstance(value, dict):
        return []
    return sorted(value.items())


__all__ = ["age", "duration", "has_invisible", "is_invisible", "pretty_json", "visible"]
