"""Regular expressions that come from outside the code (settings, the admin, a form).

They run on RE2 (`google-re2`), whose matching time is linear in the input: no pattern
and no input can make a match backtrack for minutes and block the process that runs it
(ReDoS). RE2 has no look-ahead, look-behind or backreferences; a pattern it cannot
compile is refused with a `PatternError` that says why and how to fix it. Patterns
written in the code itself may keep using `re`.
"""

from __future__ import annotations

import functools
from typing import Any

import re2

MAX_PATTERN_CHARS = 1000
# RE2 refuses a pattern whose compiled program would need more memory than this.
MAX_PATTERN_MEMORY = 8 << 20

ENGINE = "re2"


class PatternError(ValueError):
    """A pattern RE2 cannot compile, or one that is too long."""


def _options() -> Any:
    options = re2.Options()
    options.log_errors = False  # the error is raised to the caller, not printed
    options.max_mem = MAX_PATTERN_MEMORY
    return options


_OPTIONS = _options()


@functools.lru_cache(maxsize=256)
def compile_pattern(text: str) -> Any:
    """`text` compiled by RE2, or `PatternError`."""
    if len(text) > MAX_PATTERN_CHARS:
        raise PatternError(
            f"The pattern {text[:40]!r}… is {len(text)} characters long; at most "
            f"{MAX_PATTERN_CHARS} are allowed."
        )
    try:
        return re2.compile(text, _OPTIONS)
    except re2.error as exc:
        reason = exc.args[0] if exc.args else exc
        if isinstance(reason, bytes):
            reason = reason.decode("utf-8", "replace")
        raise PatternError(
            f"{text!r} is not a regular expression RE2 accepts ({reason}). Patterns run on "
            "RE2, which matches in linear time and so has no look-ahead, look-behind or "
            "backreferences: rewrite the pattern without them."
        ) from None


def search(pattern: str, text: str) -> bool:
    """Whether `pattern` (RE2 syntax) matches somewhere in `text`."""
    return compile_pattern(pattern).search(text) is not None


__all__ = ["ENGINE", "MAX_PATTERN_CHARS", "PatternError", "compile_pattern", "search"]
