"""What a resume value answers: the map `{interrupt_id: answer}` a run continues with.

A scalar answers the one pending interrupt, a dict of interrupt ids answers those, no
value continues past a static breakpoint. Every refusal is raised here, before anything
runs or is written, so a refused resume leaves the thread exactly as it was.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from beamweaver_core.checkpoint import serde
from beamweaver_core.exceptions import (
    AmbiguousResumeError,
    MissingResumeValueError,
    NothingToResumeError,
    UnexpectedResumeValueError,
    UnknownInterruptError,
)
from beamweaver_core.types import NULL_RESUME, Interrupt

NO_VALUE: Any = object()
"""`resume()` called without a value (continue past a breakpoint)."""


def is_resume_map(value: Any) -> bool:
    """A dict is a resume map iff it is empty or every key looks like an interrupt id."""
    if type(value) is not dict:
        return False
    return all(isinstance(k, str) and len(k) == 32 and _is_hex(k) for k in value)


_HEX = frozenset("0123456789abcdefABCDEF")


def _is_hex(text: str) -> bool:
    """Hex digits only (`int(text, 16)` would also take signs, `0x`, `_` and spaces)."""
    return _HEX.issuperset(text)


def resume_map(
    resume: Any, pending: tuple[Interrupt, ...], thread_id: str | None
) -> dict[str, Any]:
    """The answers `resume` gives the `pending` interrupts of thread `thread_id`, by id
    (a breakpoint continued past maps to `None`)."""
    dynamic = [i for i in pending if i.timing is None]
    stops = [i for i in pending if i.timing is not None]
    breakpoints = {i.id: None for i in stops}
    pending_ids = [i.id for i in pending]
    if resume is NO_VALUE:
        if dynamic:
            raise MissingResumeValueError(i.id for i in dynamic)
        return breakpoints
    if is_resume_map(resume):
        unknown = [k for k in resume if k not in pending_ids]
        if unknown or not resume:
            raise UnknownInterruptError(unknown, pending_ids)
        # A breakpoint asks no question: `None` (or null_resume()) continues past it,
        # any other value would be discarded, so it is refused like an unasked answer.
        valued = [
            i for i in stops if (given := resume.get(i.id)) is not None and given is not NULL_RESUME
        ]
        if valued:
            raise UnexpectedResumeValueError(valued, resume[valued[0].id])
        return _stored_answers(resume)
    if len(dynamic) > 1:
        raise AmbiguousResumeError(i.id for i in dynamic)
    if len(dynamic) == 1:
        return _stored_answers({dynamic[0].id: resume})
    if breakpoints:
        if resume is not NULL_RESUME:
            raise UnexpectedResumeValueError(stops, resume)
        return breakpoints
    raise NothingToResumeError(
        f"Thread {thread_id!r} has no pending interrupt or breakpoint to answer with "
        f"{resume!r}. Check get_state(config).interrupts before resuming."
    )


def _stored_answers(answers: Mapping[str, Any]) -> dict[str, Any]:
    """The answers as a checkpointer reads them back (tuples as lists), so a node gets
    the same value whether it runs now or after a reload; an answer that cannot be
    stored is refused here, before any node runs. `NULL_RESUME` is kept as the marker
    of an explicit `None`."""
    return {
        iid: answer if answer is NULL_RESUME else serde.stored_form(answer, (f"<resume {iid}>",))
        for iid, answer in answers.items()
    }


__all__ = ["NO_VALUE", "is_resume_map", "resume_map"]
