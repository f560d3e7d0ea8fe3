"""The review policy of one tool: a normalized `interrupt_on` entry (`ToolPolicy`).

`interrupt_on` maps a tool name to `True` (every decision), `False` (no review) or a dict
of options: `allowed_decisions`, `when` / `predicate`, `description`, `args_schema`.
Its callables take `(call)`, `(call, state)` or `(call, state, runtime)`; their arity is
checked when the policy is parsed, so a wrong signature fails when the agent is built.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from beamweaver_core.agent.review import DECISION_TYPES, DecisionType

if TYPE_CHECKING:
    from beamweaver_core.graph.runtime import Runtime

PolicyValue = bool | Mapping[str, Any]
"""One `interrupt_on` entry as written."""

_POLICY_KEYS = frozenset({"allowed_decisions", "when", "predicate", "description", "args_schema"})


@dataclass(frozen=True, slots=True)
class ToolPolicy:
    """The review policy of one tool (a normalized `interrupt_on` entry)."""

    allowed_decisions: tuple[DecisionType, ...]
    when: Callable[..., Any] | None = None
    description: str | Callable[..., Any] | None = None
    args_schema: Mapping[str, Any] | None = None

    @classmethod
    def parse(cls, tool_name: str, value: PolicyValue) -> ToolPolicy | None:
        """`True` -> every decision, `False` -> no review, or a dict of options."""
        if value is True:
            return cls(allowed_decisions=DECISION_TYPES)
        if value is False:
            return None
        where = f"interrupt_on[{tool_name!r}]"
        if not isinstance(value, Mapping):
            raise TypeError(
                f"{where} must be True, False or a dict of review options, got {value!r}."
            )
        unknown = sorted(set(value) - _POLICY_KEYS)
        if unknown:
            raise ValueError(
                f"{where} has unknown option(s) {unknown}; known: {sorted(_POLICY_KEYS)}."
            )
        allowed = tuple(value.get("allowed_decisions", DECISION_TYPES))
        if not allowed or any(d not in DECISION_TYPES for d in allowed):
            raise ValueError(
                f"{where}['allowed_decisions'] must be a non-empty list drawn from "
                f"{list(DECISION_TYPES)}, got {value.get('allowed_decisions')!r}."
            )
        if "when" in value and "predicate" in value:
            raise ValueError(f"{where} sets both 'when' and 'predicate'; they are the same option.")
        when = value.get("when", value.get("predicate"))
        if when is not None:
            _check_arity(
                when,
                (1, 2, 3),
                f"{where}['when']",
                "(call), (call, state) or (call, state, runtime)",
            )
        description = value.get("description")
        if callable(description):
            _check_arity(
                description,
                (2, 3),
                f"{where}['description']",
                "(call, state) or (call, state, runtime)",
            )
        elif description is not None and not isinstance(description, str):
            raise TypeError(
                f"{where}['description'] must be a str or a callable, got {description!r}."
            )
        schema = value.get("args_schema")
        if schema is not None and not isinstance(schema, Mapping):
            raise TypeError(f"{where}['args_schema'] must be a JSON Schema dict, got {schema!r}.")
        return cls(tuple(allowed), when, description, schema)


def _positional_arity(fn: Callable[..., Any]) -> int | None:
    """How many positional arguments `fn` takes (`None`: any number)."""
    count = 0
    for param in inspect.signature(fn).parameters.values():
        if param.kind is param.VAR_POSITIONAL:
            return None
        if param.kind in (param.POSITIONAL_ONLY, param.POSITIONAL_OR_KEYWORD):
            count += 1
    return count


def _check_arity(
    fn: Callable[..., Any], accepted: tuple[int, ...], where: str, shapes: str
) -> None:
    arity = _positional_arity(fn)
    if arity is not None and arity not in accepted:
        raise TypeError(f"{where} takes {arity} argument(s); it must take {shapes}.")


def call_policy(
    fn: Callable[..., Any], call: dict[str, Any], state: Mapping[str, Any], runtime: Runtime
) -> Any:
    arity = _positional_arity(fn)
    return fn(*(call, state, runtime)[: 3 if arity is None else arity])


__all__ = ["PolicyValue", "ToolPolicy", "call_policy"]
