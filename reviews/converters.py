"""URL converters."""

from __future__ import annotations

from urllib.parse import quote, unquote

from beamweaver_core.runtime import thread_ids


def thread_segment(thread_id: str) -> str:
    """`thread_id` as one URL path segment. A valid id (`thread_ids`) is one already; any
    other (a thread the checkpointer created, or one from before the rule) is
    percent-encoded whole, dots included, so that neither a slash nor a `..` in it can
    make a path that leaves `/threads/` (`reverse()` encodes the `%` once more, which
    `ThreadIdConverter.to_python` undoes)."""
    if thread_ids.is_valid(thread_id):
        return thread_id
    return quote(thread_id, safe="").replace(".", "%2E")


class ThreadIdConverter:
    """Any thread id: a valid one as it is, any other as `thread_segment` encodes it
    (slashes and line breaks of older ids still resolve)."""

    regex = r"[\s\S]+"

    def to_python(self, value: str) -> str:
        thread_id = unquote(value) if "%" in value else value
        if "\x00" in thread_id:  # `%2500`: no thread id has a NUL; not a match (404)
            raise ValueError("A thread id has no NUL character.")
        return thread_id

    def to_url(self, value: str) -> str:
        return thread_segment(value)


__all__ = ["ThreadIdConverter", "thread_segment"]
