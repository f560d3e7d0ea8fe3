"""What a tool review is: the interrupt payload, the decisions, and their validation.

The payload shape is LangChain's HumanInTheLoopMiddleware's:

    {"action_requests": [{"name", "args", "description"}],
     "review_configs": [{"action_name", "allowed_decisions"(, "args_schema")}]}

`validate_decisions` is a pure function shared by the middleware (when a resumed node
reads the answer) and by review UIs (before they accept a decision), so both refuse the
same answers with the same problems.

An approve or edit decision may carry a `binding`: the `execution_digest` of the tool,
canonical arguments and review policy version it approves (`bind_decisions` adds them).
The middleware runs a bound call only if what would run still has that digest.
"""

from __future__ import annotations

import difflib
import hashlib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias

from beamweaver_core.agent.canonical import canonical_json
from beamweaver_core.agent.schema import check_schema, schema_problems
from beamweaver_core.exceptions import InvalidDecisionError, NotAReviewError
from beamweaver_core.types import Interrupt

DecisionType: TypeAlias = Literal["approve", "edit", "reject", "respond"]
DECISION_TYPES: tuple[DecisionType, ...] = ("approve", "edit", "reject", "respond")
EXECUTING_TYPES: frozenset[str] = frozenset({"approve", "edit"})
"""Decision types after which the tool runs (and which a `binding` can bind)."""
_DIGEST = re.compile(r"^[0-9a-f]{64}$")
_DECISION_KEYS = frozenset({"type", "message", "edited_action", "binding"})
_EDITED_ACTION_KEYS = frozenset({"name", "args"})


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
                f"{_preview(value)} has no 'action_requests' and 'review_configs'. Answer it "
                "with resume(value) as the node that asked it expects."
            )
        requests, configs = value["action_requests"], value["review_configs"]
        problems: list[str] = []
        if not _is_list(requests) or not _is_list(configs) or len(requests) != len(configs):
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


def _is_list(value: Any) -> bool:
    return isinstance(value, Sequence) and not isinstance(value, str | bytes)


def _preview(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 120 else text[:117] + "..."


def _action(data: Any) -> ActionRequest:
    if not isinstance(data, Mapping):
        raise TypeError(f"an action request must be a dict, got {_preview(data)}")
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
        raise TypeError(f"a review config must be a dict, got {_preview(data)}")
    if data["action_name"] != action_name:
        raise ValueError(f"review config names {data['action_name']!r}, its action {action_name!r}")
    allowed = data["allowed_decisions"]
    if not _is_list(allowed) or not allowed or any(d not in DECISION_TYPES for d in allowed):
        raise ValueError(f"allowed_decisions must be a non-empty list of {list(DECISION_TYPES)}")
    schema = data.get("args_schema")
    if schema is not None and not isinstance(schema, Mapping):
        raise TypeError("args_schema must be a dict")
    return ReviewConfig(
        action_name=action_name, allowed_decisions=tuple(allowed), args_schema=schema
    )


def decision(
    type: DecisionType,
    *,
    message: str | None = None,
    edited_action: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Build a decision dict: `decision("respond", message="Blue.")`,
    `decision("edit", edited_action={"name": ..., "args": {...}})`, `decision("approve")`."""
    if type not in DECISION_TYPES:
        raise ValueError(f"Unknown decision type {type!r}; expected one of {list(DECISION_TYPES)}.")
    built: dict[str, Any] = {"type": type}
    if message is not None:
        built["message"] = message
    if edited_action is not None:
        built["edited_action"] = {
            "name": edited_action.get("name"),
            "args": edited_action.get("args"),
        }
    return built


def validate_decisions(review: ReviewRequest, decisions: Any) -> tuple[dict[str, Any], ...]:
    """Check decisions against a review and return them normalized, one per action.

    `decisions` is the list, or the resume value `{"decisions": [...]}`. Every problem is
    collected; if there is any, `InvalidDecisionError` is raised whose `problems` are dicts
    with `index` (the decision's position, `None` for the whole answer), `field` and
    `message`.
    """
    if isinstance(decisions, Mapping):
        if set(decisions) != {"decisions"}:
            raise InvalidDecisionError(
                [
                    _problem(
                        None,
                        "decisions",
                        f"Resume with {{'decisions': [...]}}, one decision per action request; got a "
                        f"dict with keys {sorted(map(str, decisions))}.",
                    )
                ]
            )
        decisions = decisions["decisions"]
    if not _is_list(decisions):
        raise InvalidDecisionError(
            [
                _problem(
                    None,
                    "decisions",
                    f"Decisions must be a list with one decision per action request, got "
                    f"{_preview(decisions)}.",
                )
            ]
        )
    problems: list[dict[str, Any]] = []
    expected = len(review.action_requests)
    if len(decisions) != expected:
        names = ", ".join(a.name for a in review.action_requests)
        problems.append(
            _problem(
                None,
                "decisions",
                f"Expected {expected} decision(s), one per action request in order ({names}); "
                f"got {len(decisions)}.",
            )
        )
    normalized: list[dict[str, Any]] = []
    for index, (item, action, config) in enumerate(
        zip(decisions, review.action_requests, review.review_configs, strict=False)
    ):
        found, checked = _check_decision(index, item, action, config)
        problems.extend(found)
        if checked is not None:
            normalized.append(checked)
    if problems:
        raise InvalidDecisionError(problems)
    return tuple(normalized)


def _problem(index: int | None, field: str, message: str) -> dict[str, Any]:
    where = "answer" if index is None else f"decisions[{index}]"
    return {"index": index, "field": field, "message": f"{where}: {message}"}


def _check_decision(
    index: int, item: Any, action: ActionRequest, config: ReviewConfig
) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
    if not isinstance(item, Mapping):
        return [
            _problem(
                index,
                "",
                f"A decision must be a dict like {{'type': 'approve'}}, got {_preview(item)}.",
            )
        ], None
    kind = item.get("type")
    if kind not in DECISION_TYPES:
        return [
            _problem(
                index,
                "type",
                f"Unknown decision type {kind!r} for tool {action.name!r}; expected one of "
                f"{list(config.allowed_decisions)}.",
            )
        ], None
    problems: list[dict[str, Any]] = _unknown_keys(index, "", item, _DECISION_KEYS, kind)
    if kind not in config.allowed_decisions:
        problems.append(
            _problem(
                index,
                "type",
                f"Decision type {kind!r} is not allowed for tool {action.name!r}; allowed: "
                f"{list(config.allowed_decisions)}.",
            )
        )
    message = item.get("message")
    if message is not None and not isinstance(message, str):
        problems.append(
            _problem(index, "message", f"'message' must be a string, got {_preview(message)}.")
        )
    if kind == "respond" and (message is None or message == ""):
        problems.append(
            _problem(
                index,
                "message",
                "A 'respond' decision needs a non-empty 'message': the reply the model receives "
                "as the tool result.",
            )
        )
    if kind == "edit":
        problems.extend(_check_edit(index, item.get("edited_action"), action, config))
    binding = item.get("binding")
    if binding is not None and not (isinstance(binding, str) and _DIGEST.match(binding)):
        problems.append(
            _problem(
                index,
                "binding",
                f"'binding' must be the 64-character hex execution digest, got {_preview(binding)}.",
            )
        )
    if problems:
        return problems, None
    normalized: dict[str, Any] = {"type": kind}
    if kind == "edit":
        edited = item["edited_action"]
        normalized["edited_action"] = {"name": edited["name"], "args": dict(edited["args"])}
    elif message is not None or kind == "respond":
        normalized["message"] = message
    if binding is not None and kind in EXECUTING_TYPES:
        normalized["binding"] = binding
    return [], normalized


def _unknown_keys(
    index: int, prefix: str, data: Mapping[Any, Any], known: frozenset[str], kind: str
) -> list[dict[str, Any]]:
    """A problem per key of `data` outside `known`: a misspelt key must not be ignored
    (the decision would be taken without what the reviewer meant to say)."""
    problems = []
    for key in sorted(map(str, data)):
        if key in known:
            continue
        close = difflib.get_close_matches(key, sorted(known), n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        problems.append(
            _problem(
                index,
                f"{prefix}{key}",
                f"unknown key {prefix + key!r}{hint} in a {kind!r} decision; the known keys are "
                f"{[prefix + k for k in sorted(known)]}.",
            )
        )
    return problems


def _check_edit(
    index: int, edited: Any, action: ActionRequest, config: ReviewConfig
) -> list[dict[str, Any]]:
    if not isinstance(edited, Mapping):
        return [
            _problem(
                index,
                "edited_action",
                "An 'edit' decision needs 'edited_action': {'name': <the same tool>, 'args': {...}}; "
                f"got {_preview(edited)}.",
            )
        ]
    problems = _unknown_keys(index, "edited_action.", edited, _EDITED_ACTION_KEYS, "edit")
    if edited.get("name") != action.name:
        problems.append(
            _problem(
                index,
                "edited_action.name",
                f"An edit must keep the reviewed tool {action.name!r}; got {edited.get('name')!r}. "
                "Reject the call instead if another tool should run.",
            )
        )
    args = edited.get("args")
    if not isinstance(args, Mapping):
        problems.append(
            _problem(
                index,
                "edited_action.args",
                f"'args' must be a dict of arguments, got {_preview(args)}.",
            )
        )
    elif config.args_schema is not None:
        validator = check_schema(config.args_schema, f"tool {action.name!r}")
        for path, text in schema_problems(validator, dict(args)):
            field = f"edited_action.args.{path}" if path else "edited_action.args"
            problems.append(
                _problem(
                    index,
                    field,
                    f"Edited arguments for {action.name!r} are invalid at {path or 'the top level'}: {text}.",
                )
            )
    return problems


def bind_decisions(
    review: ReviewRequest, decisions: Sequence[Mapping[str, Any]]
) -> tuple[dict[str, Any], ...]:
    """`decisions` (validated, one per action) with the `binding` of every approve or edit:
    the execution digest of the call that will run under the action's review config."""
    bound: list[dict[str, Any]] = []
    for chosen, action, config in zip(
        decisions, review.action_requests, review.review_configs, strict=True
    ):
        item = {k: v for k, v in chosen.items() if k != "binding"}
        if item["type"] == "approve":
            item["binding"] = execution_digest(action.name, action.args, policy_version(config))
        elif item["type"] == "edit":
            edited = item["edited_action"]
            item["binding"] = execution_digest(
                edited["name"], edited["args"], policy_version(config)
            )
        bound.append(item)
    return tuple(bound)


class HITL:
    """Helpers for code that renders and answers tool reviews (UIs, CLIs, services)."""

    from_interrupt = staticmethod(ReviewRequest.from_interrupt)
    from_value = staticmethod(ReviewRequest.from_value)
    decision = staticmethod(decision)
    validate_decisions = staticmethod(validate_decisions)
    bind_decisions = staticmethod(bind_decisions)


__all__ = [
    "DECISION_TYPES",
    "EXECUTING_TYPES",
    "HITL",
    "ActionRequest",
    "DecisionType",
    "ReviewConfig",
    "ReviewRequest",
    "bind_decisions",
    "decision",
    "execution_digest",
    "policy_version",
    "validate_decisions",
]
