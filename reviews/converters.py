"""URL converters."""

from __future__ import annotations


class ThreadIdConverter:
    """Any thread id, slashes and line breaks included (ids are free text)."""

    regex = r"[\s\S]+"

    def to_python(self, value: str) -> str:
        return value

    def to_url(self, value: str) -> str:
        return value


__all__ = ["ThreadIdConverter"]
