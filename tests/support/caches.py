"""A cache that fails, for the rate limits that must let everyone through when it does."""

from __future__ import annotations

from typing import Any


class BrokenCache:
    """A cache whose every call fails, like Redis down."""

    def __getattr__(self, name: str) -> Any:
        def fail(*args: Any, **kwargs: Any) -> Any:
            raise ConnectionError("Error 111 connecting to 127.0.0.1:6379. Connection refused.")

        return fail
