"""Template tags for pages that live inside a host project (see docs/production.md).

The inbox's page frame links to the log-out view and the admin. A host project may name
them differently or have neither, so the frame asks for them by name and leaves a link
out when the host has no such URL, instead of failing the page.
"""

from __future__ import annotations

from django import template
from django.urls import NoReverseMatch, reverse

register = template.Library()


@register.simple_tag
def optional_url(name: str) -> str:
    """The path of the URL named `name`, or "" when the project has none by that name."""
    try:
        return reverse(name)
    except NoReverseMatch:
        return ""
