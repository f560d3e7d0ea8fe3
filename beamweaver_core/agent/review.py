"""What a tool review is: the interrupt payload, its decision types, and the digests an
approval binds.

The payload shape is LangChain's HumanInTheLoopMiddleware's:

    {"action_requests": [{"name", "args", "description"}],
     "review_configs": [{"action_name", "allowed_decisions"(, "args_schema")}]}

An approve or edit decision may carry a `binding`: the `execution_digest` of the tool,
canonical arguments and review policy version it approves (see `decisions`). The
middleware runs a bound call only if what would run still has that digest.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias

from beamweaver_core.agent.canonical import canonical_json
from beamweaver_core.exceptions import NotAReviewError
from beamweaver_core.types import Interrupt

DecisionType: TypeAlias = Literal["approve", "edit", "reject", "respond"]
DECISION_TYPES: tuple[DecisionType, ...] = ("approve", "edit", "reject", "respond")
EXECUTING_TYPES: frozenset[str] = frozenset({"approve", "edit"})
"""Decision types after which the tool runs (and which a `binding` can bind)."""


@dataclass(frozen=True, slots=True)
class ActionRequest:
    """A tool call waiting for review: tool `name`, its `args`, and a `description`."""

    name: str
    args: Mapping[str, Any]
    description: str

    def to_dict(self) -> dict[str, Any]:
        """The payload form: `{"name", "args", "description"}`."""
        return {"name": self.name, "args": dict(self.args), "description": self.description}


@dataclass(frozen=True, slots=True)
class ReviewConfig:
    """How an action may be decided; `args_schema` validates edited arguments."""

    action_name: str
    allowed_decisions: tuple[DecisionType, ...]
    args_schema: Mapping[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        """The payload form; `args_schema` only when one is known."""
        data: dict[str, Any] = {
            "action_name": self.action_name,
            "allowed_decisions": list(self.allowed_decisions),
        }
        if self.args_schema is not None:
            data["args_schema"] = self.args_schema
        return data


def policy_version(config: ReviewConfig) -> str:
    """The version of the review policy an action is decided under: the SHA-256 (hex) of
    its review config (tool, allowed decisions, argument schema) in canonical JSON."""
    return hashlib.sha256(canonical_json(config.to_dict()).encode()).hexdigest()


def execution_digest(tool: str, args: Mapping[str, Any], version: str) -> str:
    """What an approval binds: SHA-256 (hex) of the tool name, its canonical arguments and
    the review policy version, so any change to one of them changes the digest."""
    material = canonical_json({"args": dict(args), "policy_version": version, "tool": tool})
    return hashlib.sha256(material.encode()).hexdigest()


@dataclass(frozen=True, slots=True)
class ReviewRequest:
    """A review: one action request and one review config per reviewed tool call.

    `interrupt_id` is set when it was read from an `Interrupt` (answer that id when several
    interrupts are pending).
    """

    action_requests: tuple[ActionRequest, ...]
    review_configs: tuple[ReviewConfig, ...]
    interrupt_id: str | None = None

    def to_value(self) -> dict[str, Any]:
        """The interrupt payload, exactly as the middleware raises it."""
        return {
            "action_requests": [a.to_dict() for a in self.action_requests],
            "review_configs": [c.to_dict() for c in self.review_configs],
        }

    @classmethod
    def from_value(cls, value: Any, interrupt_id: str | None = None) -> ReviewRequest:
        """Read a review payload; `NotAReviewError` says why `value` is not one."""
        if not isinstance(value, Mapping) or not {"action_requests", "review_configs"} <= set(
            value
        ):
            raise NotAReviewError(
                "The interrupt is not a HumanInTheLoop tool review: its value "
                f"{preview(value)} has no 'action_requests' and 'review_configs'. Answer it "
                "with resume(value) as the node that asked it expects."
            )
        requests, configs = value["action_requests"], value["review_configs"]
        problems: list[str] = []
        if not is_list(requests) or not is_list(configs) or len(requests) != len(configs):
            problems.append("'action_requests' and 'review_configs' must be lists of equal length")
            requests, configs = [], []
        actions: list[ActionRequest] = []
        reviews: list[ReviewConfig] = []
        for i, (request, config) in enumerate(zip(requests, configs, strict=True)):
            try:
                actions.append(_action(request))
                reviews.append(_config(config, actions[-1].name))
            except (KeyError, TypeError, ValueError) as exc:
                problems.append(f"item {i}: {exc}")
        if problems:
            raise NotAReviewError(
                "The interrupt is not a valid HumanInTheLoop tool review: " + "; ".join(problems)
            )
        return cls(tuple(actions), tuple(reviews), interrupt_id)

    @classmethod
    def from_interrupt(cls, interrupt: Interrupt) -> ReviewRequest:
        """Read the review an `Interrupt` carries (`NotAReviewError` for other interrupts)."""
        if not isinstance(interrupt, Interrupt):
            raise TypeError(f"from_interrupt expects an Interrupt, got {interrupt!r}")
        if interrupt.timing is not None:
            raise NotAReviewError(
                f"The interrupt is a static breakpoint {interrupt.timing} node "
                f"{interrupt.node!r}, not a tool review; continue with resume(None)."
            )
        return cls.from_value(interrupt.value, interrupt.id)


def is_list(value: Any) -> bool:
    """A JSON array as Python reads it: a sequence that is not a string."""
    return isinstance(value, Sequence) and not isinstance(value, str | bytes)


def preview(value: Any) -> str:
    """`repr(value)`, cut to 120 characters for an error message."""
    text = repr(value)
    return text if len(text) <= 120 else text[:117] + "..."


def _action(data: Any) -> ActionRequest:
    if not isinstance(data, Mapping):
        raise TypeError(f"an action request must be a dict, got {preview(data)}")
    name, args, description = data["name"], data["args"], data.get("description", "")
    if (
        not isinstance(name, str)
        or not isinstance(args, Mapping)
        or not isinstance(description, str)
    ):
        raise TypeError("an action request needs a str 'name', a dict 'args', a str 'description'")
    return ActionRequest(name=name, args=dict(args), description=description)


def _config(data: Any, action_name: str) -> ReviewConfig:
    if not isinstance(data, Mapping):
        raise TypeError(f"a review config must be a dict, got {preview(data)}")
    if data["action_name"] != action_name:
        raise ValueError(f"review config names {data['action_name']!r}, its action {action_name!r}")
    allowed = data["allowed_decisions"]
    if not is_list(allowed) or not allowed or any(d not in DECISION_TYPES for d in allowed):
        raise ValueError(f"allowed_decisions must be a non-empty list of {list(DECISION_TYPES)}")
    schema = data.get("args_schema")
    if schema is not None and not isinstance(schema, Mapping):
        raise TypeError("args_schema must be a dict")
    return ReviewConfig(
        action_name=action_name, allowed_decisions=tuple(allowed), args_schema=schema
    )


__all__ = [
    "DECISION_TYPES",
    "EXECUTING_TYPES",
    "ActionRequest",
    "DecisionType",
    "ReviewConfig",
    "ReviewRequest",
    "execution_digest",
    "policy_version",
]
