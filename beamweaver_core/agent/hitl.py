"""`HumanInTheLoop`: review model-proposed tool calls before they run.

It runs in `after_model`. The model's tool calls that match `interrupt_on` are packaged as
one review (`interrupt_mode="all"`) or one review per call (`"first"`), raised with
`interrupt()`, and the answer is validated in the same node: an invalid answer raises
`InvalidDecisionError`, and because the engine discards an answer consumed by a task that
fails, the thread keeps waiting on the same interrupt. Valid decisions become:

- approve: the call runs as proposed;
- edit: the call stays in the history as the model proposed it, the reviewer's version
  runs instead, and its result tells the model so (it must not re-issue the original);
- reject: an error tool message telling the model not to retry the call;
- respond: a successful tool message carrying the reviewer's text; the tool never runs.

An approve or edit that carries a `binding` (see `review.execution_digest`; the review
inbox always adds one) is bound to what executes: when the tool is about to run, the
digest of the call that would run (tool, canonical arguments, the tool's current review
config) must equal it, or the tool does not run and the model is told why. So an
approval never covers arguments that drifted after it (a state update, another
middleware rewriting the call) or a review policy that changed before the resume.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from beamweaver_core.agent.canonical import canonical_json
from beamweaver_core.agent.messages import Message, ToolCall
from beamweaver_core.agent.middleware import Middleware, ToolHandler, ToolRequest
from beamweaver_core.agent.review import (
    DECISION_TYPES,
    ActionRequest,
    DecisionType,
    ReviewConfig,
    ReviewRequest,
    execution_digest,
    policy_version,
    validate_decisions,
)
from beamweaver_core.agent.state import pending_tool_calls
from beamweaver_core.agent.tools import Tool, as_tool
from beamweaver_core.graph.interrupts import interrupt

if TYPE_CHECKING:
    from beamweaver_core.graph.runtime import Runtime
    from beamweaver_core.graph.state import Reducer

DEFAULT_DESCRIPTION_PREFIX = "Tool execution pending approval"
EDITS_KEY = "hitl_edited_tool_calls"
"""State key: tool call id -> the reviewer's `{"name", "args"}` that runs instead."""

BINDINGS_KEY = "hitl_bindings"
"""State key: tool call id -> the execution digest its approval or edit was bound to."""

BINDING_REFUSAL_TEMPLATE = (
    "The tool call `{name}` (id {call_id}) was not executed: what would run (the tool, its "
    "arguments or its review policy) differs from what the human reviewer approved. Do not "
    "retry it unless the user asks; a new call is reviewed again."
)

logger = logging.getLogger(__name__)

EDIT_NOTICE_TEMPLATE = (
    "Note: a human reviewer replaced this tool call before it ran; the call as you proposed "
    "it was not executed and must not be issued again. Executed instead: {name} with "
    "arguments {args}.\n\nTool response:\n"
)

InterruptMode = Literal["all", "first"]
PolicyValue = bool | Mapping[str, Any]
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


def _call_policy(
    fn: Callable[..., Any], call: dict[str, Any], state: Mapping[str, Any], runtime: Runtime
) -> Any:
    arity = _positional_arity(fn)
    return fn(*(call, state, runtime)[: 3 if arity is None else arity])


class HumanInTheLoop(Middleware):
    """Pause after the model proposes matching tool calls, before any tool executes.

    `interrupt_on` maps tool names to `True` (decisions approve, edit, reject, respond),
    `False` (no review) or a dict with `allowed_decisions`, `when` / `predicate` (callable
    of `(call)`, `(call, state)` or `(call, state, runtime)`: review only when it returns
    true; the node runs again on resume, so it must decide the same way then: a predicate
    reading `runtime.context` needs the same context on resume), `description` (str, or
    callable of `(call, state)` / `(call, state, runtime)`) and `args_schema` (validates
    edited arguments). Callables receive the call as `{"id", "name", "args"}`.
    `tools` supplies argument schemas for tools without an `args_schema` of their own.
    """

    def __init__(
        self,
        interrupt_on: Mapping[str, PolicyValue],
        *,
        description_prefix: str = DEFAULT_DESCRIPTION_PREFIX,
        tools: Iterable[Tool | type[Tool] | Callable[..., Any]] | None = None,
        interrupt_mode: InterruptMode = "all",
        name: str | None = None,
    ) -> None:
        super().__init__(name=name)
        if interrupt_mode not in ("all", "first"):
            raise ValueError(f"interrupt_mode must be 'all' or 'first', got {interrupt_mode!r}.")
        parsed = {
            tool_name: ToolPolicy.parse(tool_name, v) for tool_name, v in interrupt_on.items()
        }
        self.policies: dict[str, ToolPolicy] = {k: v for k, v in parsed.items() if v is not None}
        self.description_prefix = description_prefix
        self.interrupt_mode: InterruptMode = interrupt_mode
        self.tool_schemas: dict[str, Mapping[str, Any]] = {}
        for item in tools or ():
            tool_obj = as_tool(item)
            self.tool_schemas[tool_obj.name] = tool_obj.args_schema

    def state_reducers(self) -> Mapping[str, Reducer]:
        """Edits and bindings of successive reviews are merged by tool call id."""
        return {EDITS_KEY: _merge_edits, BINDINGS_KEY: _merge_edits}

    def after_model(self, state: Mapping[str, Any], runtime: Runtime) -> dict[str, Any] | None:
        """Review the matching tool calls of the model's last reply; apply the decisions."""
        gated = [
            (call, policy)
            for call in pending_tool_calls(state.get("messages") or ())
            if (policy := self.policies.get(call.name)) is not None
            and self._needs_review(call, policy, state, runtime)
        ]
        if not gated:
            return None
        batches = [gated] if self.interrupt_mode == "all" else [[item] for item in gated]
        decided: list[tuple[ToolCall, dict[str, Any]]] = []
        for batch in batches:
            review = self._review(batch, state, runtime)
            answer = interrupt(review.to_value())
            decided.extend(
                zip((call for call, _ in batch), validate_decisions(review, answer), strict=True)
            )
        return _apply(decided)

    def wrap_tool_call(self, request: ToolRequest, handler: ToolHandler) -> Message:
        """Run the reviewer's version of an edited call and say so in its result; refuse a
        bound call whose execution digest no longer matches its approval."""
        edited = (request.state.get(EDITS_KEY) or {}).get(request.tool_call.id)
        call = request.tool_call
        if edited is not None:
            call = ToolCall(id=call.id, name=edited["name"], args=edited["args"])
        binding = (request.state.get(BINDINGS_KEY) or {}).get(call.id)
        if binding is not None and binding != self.execution_digest(call):
            logger.warning(
                "Tool call %s (%s) refused: it differs from what the reviewer approved",
                call.id,
                call.name,
            )
            return Message.tool(
                BINDING_REFUSAL_TEMPLATE.format(name=call.name, call_id=call.id),
                tool_call_id=call.id,
                name=call.name,
                status="error",
            )
        if edited is None:
            return handler(request)
        result = handler(request.replace(tool_call=call))
        notice = EDIT_NOTICE_TEMPLATE.format(name=call.name, args=canonical_json(dict(call.args)))
        return Message.tool(
            notice + result.content,
            tool_call_id=result.tool_call_id or call.id,
            name=result.name,
            status=result.status or "success",
        )

    def review_config(self, tool_name: str) -> ReviewConfig | None:
        """The review config of `tool_name` under the current policy (`None`: not reviewed)."""
        policy = self.policies.get(tool_name)
        return None if policy is None else self._config(tool_name, policy)

    def _config(self, tool_name: str, policy: ToolPolicy) -> ReviewConfig:
        schema = (
            policy.args_schema
            if policy.args_schema is not None
            else self.tool_schemas.get(tool_name)
        )
        return ReviewConfig(tool_name, policy.allowed_decisions, schema)

    def execution_digest(self, call: ToolCall) -> str | None:
        """The digest an approval of `call` must carry for it to run now (`None` when the
        tool is no longer reviewed: no approval can match)."""
        config = self.review_config(call.name)
        if config is None:
            return None
        return execution_digest(call.name, dict(call.args), policy_version(config))

    def _needs_review(
        self, call: ToolCall, policy: ToolPolicy, state: Mapping[str, Any], runtime: Runtime
    ) -> bool:
        return policy.when is None or bool(
            _call_policy(policy.when, call.to_dict(), state, runtime)
        )

    def _review(
        self, batch: list[tuple[ToolCall, ToolPolicy]], state: Mapping[str, Any], runtime: Runtime
    ) -> ReviewRequest:
        actions, configs = [], []
        for call, policy in batch:
            if callable(policy.description):
                description = str(_call_policy(policy.description, call.to_dict(), state, runtime))
            elif policy.description is not None:
                description = policy.description
            else:
                description = (
                    f"{self.description_prefix}\n\nTool: {call.name}\n"
                    f"Args: {canonical_json(dict(call.args))}"
                )
            actions.append(
                ActionRequest(name=call.name, args=dict(call.args), description=description)
            )
            configs.append(self._config(call.name, policy))
        return ReviewRequest(tuple(actions), tuple(configs))


def _apply(decided: list[tuple[ToolCall, dict[str, Any]]]) -> dict[str, Any] | None:
    """State updates for validated decisions: synthesized tool messages and edits."""
    messages: list[Message] = []
    edits: dict[str, dict[str, Any]] = {}
    bindings: dict[str, str] = {}
    for call, chosen in decided:
        kind = chosen["type"]
        if "binding" in chosen:
            bindings[call.id] = chosen["binding"]
        if kind == "edit":
            edits[call.id] = chosen["edited_action"]
        elif kind == "reject":
            text = rejection_text(call, chosen.get("message"))
            messages.append(
                Message.tool(text, tool_call_id=call.id, name=call.name, status="error")
            )
        elif kind == "respond":
            messages.append(Message.tool(chosen["message"], tool_call_id=call.id, name=call.name))
    update: dict[str, Any] = {}
    if messages:
        update["messages"] = messages
    if edits:
        update[EDITS_KEY] = edits
    if bindings:
        update[BINDINGS_KEY] = bindings
    return update or None


def rejection_text(call: ToolCall, reason: str | None) -> str:
    """The tool result of a rejected call: what happened, and not to retry it."""
    lines = [
        f"The human reviewer rejected the tool call `{call.name}` (id {call.id}); the tool was not executed."
    ]
    if reason:
        lines.append(f"Reason: {reason}")
    lines.append("Do not retry this tool call unless the user explicitly asks for it.")
    return "\n".join(lines)


def _merge_edits(existing: Mapping[str, Any], update: Mapping[str, Any]) -> dict[str, Any]:
    return {**existing, **update}


__all__ = [
    "BINDINGS_KEY",
    "BINDING_REFUSAL_TEMPLATE",
    "DEFAULT_DESCRIPTION_PREFIX",
    "EDITS_KEY",
    "EDIT_NOTICE_TEMPLATE",
    "HumanInTheLoop",
    "InterruptMode",
    "ToolPolicy",
    "rejection_text",
]
