"""Template filters for showing untrusted text honestly.

`visible` escapes text and turns every character a human cannot see (control and format
characters, bidi overrides, zero-width characters, variation selectors, look-alike
spaces: `beamweaver_core.invisible`) into a visible marker such as `[U+202E]`, and marks
the letters of a word that mixes scripts (a Cyrillic U+0430 in an e-mail address), so that
what the reviewer reads is what executes.
Both `visible` and `pretty_json` redact secret-shaped values (`beamweaver_core.redaction`):
untrusted text can carry credentials, wherever a template shows it.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django import template
from django.utils import timezone
from django.utils.html import conditional_escape, format_html
from django.utils.safestring import SafeString, mark_safe

from beamweaver_core import invisible, redaction
from beamweaver_core.conf import conf
from beamweaver_core.redaction import redact_text
from reviews import analytics

register = template.Library()


@register.simple_tag
def live_poll() -> str:
    """The `hx-trigger` of a page's catch-up poll (`BEAMWEAVER["LIVE_POLL_SECONDS"]`)."""
    seconds = conf.live_poll_seconds
    return f"every {max(100, round(seconds * 1000))}ms"


@register.filter
def visible(value: Any, reveal: bool = False) -> SafeString:
    """Escaped, redacted text with every character a human cannot see shown as a
    `[U+XXXX]` marker and every confusable letter marked (`beamweaver_core.invisible`).
    `reveal` (a reviewer who revealed the secrets of a proposal) skips the redaction."""
    text = "" if value is None else str(value)
    if not reveal:
        text = redact_text(text)
    parts: list[str] = []
    for segment in invisible.segments(text):
        if segment.kind == "invisible":
            code = f"U+{ord(segment.text):04X}"
            parts.append(
                format_html('<mark class="ctl" title="{}">[{}]</mark>', segment.note, code)
            )
        elif segment.kind == "confusable":
            parts.append(
                format_html(
                    '<mark class="confusable" title="{}">{}</mark>', segment.note, segment.text
                )
            )
        else:
            parts.append(conditional_escape(segment.text))
    return mark_safe("".join(parts))  # every part was escaped above


@register.filter
def has_invisible(value: Any) -> bool:
    """Whether the text has a character a human cannot see or a confusable letter."""
    return invisible.has_hidden("" if value is None else str(value))


@register.filter
def marked(value: Any) -> str:
    """Plain text with invisible characters as `[U+XXXX]` (for attributes such as
    `title`, which cannot carry markup; autoescaping still applies)."""
    return invisible.marked("" if value is None else str(value))


@register.filter
def pretty_json(value: Any, reveal: bool = False) -> str:
    """Indented, redacted JSON with sorted keys (plain text: escape it with `visible`);
    `reveal` skips the redaction."""
    return redaction.pretty_json(value, reveal=reveal)


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


__all__ = ["age", "duration", "has_invisible", "marked", "pretty_json", "visible"]
