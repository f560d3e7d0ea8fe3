"""Answering a tool review: building, validating and binding decisions, and `HITL`.

`validate_decisions` is a pure function shared by the middleware (when a resumed node
reads the answer) and by review UIs (before they accept a decision), so both refuse the
same answers with the same problems. `bind_decisions` adds to every approve or edit the
`binding` (execution digest) of the call it lets run. `HITL` gathers these for code that
renders and answers reviews (UIs, CLIs, services).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping, Sequence
from typing import Any

from beamweaver_core.agent.review import (
    DECISION_TYPES,
    EXECUTING_TYPES,
    ActionRequest,
    DecisionType,
    ReviewConfig,
    ReviewRequest,
    execution_digest,
    is_list,
    policy_version,
    preview,
)
from beamweaver_core.agent.schema_validation import check_schema, schema_problems
from beamweaver_core.exceptions import InvalidDecisionError

_DIGEST = re.compile(r"^[0-9a-f]{64}$")
_DECISION_KEYS = frozenset({"type", "message", "edited_action", "binding"})
_EDITED_ACTION_KEYS = frozenset({"name", "args"})


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
    if not is_list(decisions):
        raise InvalidDecisionError(
            [
                _problem(
                    None,
                    "decisions",
                    f"Decisions must be a list with one decision per action request, got "
                    f"{preview(decisions)}.",
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
                f"A decision must be a dict like {{'type': 'approve'}}, got {preview(item)}.",
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
            _problem(index, "message", f"'message' must be a string, got {preview(message)}.")
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
                f"'binding' must be the 64-character hex execution digest, got {preview(binding)}.",
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
                f"got {preview(edited)}.",
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
                f"'args' must be a dict of arguments, got {preview(args)}.",
            )
        )
    elif config.args_schema is not None:
        try:
            validator = check_schema(config.args_schema, f"tool {action.name!r}")
        except ValueError as exc:
            # A review paused before its schema's patterns had to run on RE2 (or a payload
            # not written by our middleware): the edit cannot be checked, so it is refused.
            problems.append(
                _problem(
                    index,
                    "edited_action.args",
                    f"Edits to {action.name!r} cannot be checked: {exc} Approve or reject "
                    "the call instead.",
                )
            )
            return problems
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


__all__ = ["HITL", "bind_decisions", "decision", "validate_decisions"]
