"""`HumanInTheLoop`: review model-proposed tool calls before they run.

It runs in `after_model`. The model's tool calls that match `interrupt_on` are packaged as
one review (`interrupt_mode="all"`) or one review per call (`"first"`), raised with
`interrupt()`, and the answer is validated in the same node: an invalid answer raises
`InvalidDecisionError`, and because the engine discards an answer consumed by a task that
fails, the thread keeps waiting on the same interrupt. Valid decisions become:

- approve: the call runs as proposed;
- edit: the reviewer's call replaces the proposed one in the assistant message that
  proposed it (same tool call id), so the model's history shows the call that actually
  ran, followed by its plain result. The call as proposed stays in that message's
  `metadata[ORIGINAL_TOOL_CALLS_KEY]` (and the review inbox audits both);
- reject: an error tool message whose content is the reviewer's message as written; only
  when they left it empty, a default text saying the call was rejected and not to retry it;
- respond: a successful tool message carrying the reviewer's text; the tool never runs.

Tool messages written for a reject or a respond carry `metadata[REVIEW_DECISION_KEY]`.

On resume the node runs again, but the answer is applied to the calls the question was
asked about, read back from the saved interrupt (`answered_interrupt()`), never to a
review recomputed now: a `when` predicate reading `runtime.context`, an `interrupt_on`
map or middleware changed by a deploy, or a different model reply cannot redirect or drop
it. The recorded calls are matched to the pending tool calls of the assistant message by
name and arguments; if one is missing (the state changed under the pause), the resume is
refused with `ReviewChangedError` and the thread stays paused. A pending call that the
current policy reviews but the answered question did not cover is asked about in a new
review before anything runs.

An approve or edit that carries a `binding` (see `review.execution_digest`; the review
inbox always adds one) is bound to what executes: when the tool is about to run, the
digest of the call that would run (tool, canonical arguments, the tool's current review
config) must equal it, or the tool does not run and the model is told why. So an
approval never covers arguments that drifted after it (a state update, another
middleware rewriting the call) or a review policy that changed before the resume.
"""

from __future__ import annotations

import copy
import difflib
import logging
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, Literal

from beamweaver_core.agent.canonical import canonical_json
from beamweaver_core.agent.decisions import validate_decisions
from beamweaver_core.agent.middleware import Middleware, ToolHandler, ToolRequest
from beamweaver_core.agent.review import (
    ActionRequest,
    ReviewConfig,
    ReviewRequest,
    execution_digest,
    policy_version,
)
from beamweaver_core.agent.review_policy import PolicyValue, ToolPolicy, call_policy
from beamweaver_core.agent.review_updates import (
    BINDINGS_KEY,
    EDITS_KEY,
    decision_updates,
    merge_by_call_id,
)
from beamweaver_core.agent.state import pending_tool_calls
from beamweaver_core.agent.tools import Tool
from beamweaver_core.agent.toolsets import as_tool
from beamweaver_core.exceptions import (
    CheckpointerRequiredError,
    NotAReviewError,
    ReviewChangedError,
)
from beamweaver_core.graph.interrupts import answered_interrupt, interrupt
from beamweaver_core.messages import Message, ToolCall

if TYPE_CHECKING:
    from collections.abc import Collection, Sequence

    from beamweaver_core.graph.runtime import Runtime
    from beamweaver_core.graph.state import Reducer
    from beamweaver_core.types import Interrupt

DEFAULT_DESCRIPTION_PREFIX = "Tool execution pending approval"

BINDING_REFUSAL_TEMPLATE = (
    "The tool call `{name}` (id {call_id}) was not executed: what would run (the tool, its "
    "arguments or its review policy) differs from what the human reviewer approved. Do not "
    "retry it unless the user asks; a new call is reviewed again."
)

CHECKPOINTER_ADVICE = (
    "Give the agent one: Agent.build(..., checkpointer=MemoryCheckpointer()) "
    "(PostgresCheckpointer() to resume in another process); a module-style agent takes the "
    "`checkpointer` class attribute or checkpointer= on each call (invoke, resume, ...)."
)
"""How to fix an agent that must pause or resume without a checkpointer."""

logger = logging.getLogger(__name__)

InterruptMode = Literal["all", "first"]


class HumanInTheLoop(Middleware):
    """Pause after the model proposes matching tool calls, before any tool executes.

    `interrupt_on` maps tool names to `True` (decisions approve, edit, reject, respond),
    `False` (no review) or a dict with `allowed_decisions`, `when` / `predicate` (callable
    of `(call)`, `(call, state)` or `(call, state, runtime)`: review only when it returns
    true; it decides when the question is asked, and an answer is applied to the calls it
    was asked about whatever the predicate says on resume), `description` (str, or
    callable of `(call, state)` / `(call, state, runtime)`) and `args_schema` (validates
    edited arguments). Callables receive the call as `{"id", "name", "args"}`.
    `tools` supplies argument schemas for tools without an `args_schema` of their own.
    Every key must name a tool of the agent the middleware is used in (checked when the
    agent is built). A subagent built from a `SubagentSpec` without its own `interrupt_on`
    inherits this middleware (restricted to the subagent's tools).
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
        self.tool_names: tuple[str, ...] = tuple(parsed)
        """Every tool the policy names (`False` entries included)."""
        self.description_prefix = description_prefix
        self.interrupt_mode: InterruptMode = interrupt_mode
        self.tool_schemas: dict[str, Mapping[str, Any]] = {}
        for item in tools or ():
            tool_obj = as_tool(item)
            self.tool_schemas[tool_obj.name] = tool_obj.args_schema

    def state_reducers(self) -> Mapping[str, Reducer]:
        """Edits and bindings of successive reviews are merged by tool call id."""
        return {EDITS_KEY: merge_by_call_id, BINDINGS_KEY: merge_by_call_id}

    def after_model(self, state: Mapping[str, Any], runtime: Runtime) -> dict[str, Any] | None:
        """Review the matching tool calls of the model's last reply; apply the decisions.

        Each question is either answered already (then the answer goes to the calls the
        saved question was about) or new (then the current policy picks its calls among
        those not decided yet); no tool runs before every question is answered.
        """
        pending = pending_tool_calls(state.get("messages") or ())
        decided: list[tuple[ToolCall, dict[str, Any]]] = []
        reviewed: set[str] = set()
        while True:
            asked = answered_interrupt()
            if asked is not None:
                review, calls = self._recorded(asked, pending, reviewed)
            else:
                gated = [
                    (call, policy)
                    for call in pending
                    if call.id not in reviewed
                    and (policy := self.policies.get(call.name)) is not None
                    and self._needs_review(call, policy, state, runtime)
                ]
                if not gated:
                    break
                batch = gated if self.interrupt_mode == "all" else gated[:1]
                review = self._review(batch, state, runtime)
                calls = [call for call, _ in batch]
            answer = self._ask(review, calls)
            decided.extend(zip(calls, validate_decisions(review, answer), strict=True))
            reviewed.update(call.id for call in calls)
        return decision_updates(decided)

    def _ask(self, review: ReviewRequest, calls: Sequence[ToolCall]) -> Any:
        try:
            return interrupt(review.to_value())
        except CheckpointerRequiredError:
            raise CheckpointerRequiredError(
                f"The tool call(s) {[c.name for c in calls]} need a human review, but the agent "
                f"has no checkpointer to save the paused run. {CHECKPOINTER_ADVICE}"
            ) from None

    def _recorded(
        self, asked: Interrupt, pending: Sequence[ToolCall], reviewed: Collection[str]
    ) -> tuple[ReviewRequest, list[ToolCall]]:
        """The answered review as it was asked, and the pending calls it was about (matched
        by tool name and canonical arguments, in order); `ReviewChangedError` if one of
        them is no longer pending."""
        try:
            review = ReviewRequest.from_value(asked.value, asked.id)
        except NotAReviewError as exc:
            raise ReviewChangedError(
                f"The answer to interrupt {asked.id} cannot be applied: the question saved with "
                f"the pause is not a tool review of this middleware ({exc}). The agent's code "
                "changed under the paused thread; resume it with the version that paused it. "
                "Nothing was consumed and the thread is still paused."
            ) from None
        available = [call for call in pending if call.id not in reviewed]
        calls: list[ToolCall] = []
        for action in review.action_requests:
            wanted = canonical_json(dict(action.args))
            found = next(
                (
                    call
                    for call in available
                    if call.name == action.name and canonical_json(dict(call.args)) == wanted
                ),
                None,
            )
            if found is None:
                raise ReviewChangedError(_changed(asked.id, review, pending))
            available.remove(found)
            calls.append(found)
        return review, calls

    def wrap_tool_call(self, request: ToolRequest, handler: ToolHandler) -> Message:
        """Refuse a bound call whose execution digest no longer matches its approval.

        (An edited call is already the call in the history; a thread paused by a version
        that kept edits in `EDITS_KEY` still runs the reviewer's version.)"""
        call = request.tool_call
        legacy = (request.state.get(EDITS_KEY) or {}).get(call.id)
        if legacy is not None:
            call = ToolCall(id=call.id, name=legacy["name"], args=legacy["args"])
            request = request.replace(tool_call=call)
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
        return handler(request)

    def check_tools(self, known: Collection[str], *, declared_as: str) -> list[str]:
        """Problems: the keys of this policy that name no tool in `known` (each with a
        did-you-mean when a known name is close). `declared_as` says where the policy was
        written, for the message."""
        problems = []
        for tool_name in sorted(set(self.tool_names) - set(known)):
            close = difflib.get_close_matches(tool_name, sorted(known), n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            problems.append(
                f"{declared_as} names {tool_name!r}, which is not a tool of the agent{hint}; "
                f"known tools: {sorted(known)}. A policy for a missing tool reviews nothing."
            )
        return problems

    def restricted_to(self, tool_names: Collection[str]) -> HumanInTheLoop | None:
        """This middleware reviewing only `tool_names` (`None` if it names none of them):
        what a subagent with those tools inherits."""
        policies = {k: v for k, v in self.policies.items() if k in tool_names}
        if not policies:
            return None
        inherited = copy.copy(self)
        inherited.policies = policies
        inherited.tool_names = tuple(k for k in self.tool_names if k in tool_names)
        return inherited

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
        return policy.when is None or bool(call_policy(policy.when, call.to_dict(), state, runtime))

    def _review(
        self, batch: list[tuple[ToolCall, ToolPolicy]], state: Mapping[str, Any], runtime: Runtime
    ) -> ReviewRequest:
        actions, configs = [], []
        for call, policy in batch:
            if callable(policy.description):
                description = str(call_policy(policy.description, call.to_dict(), state, runtime))
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


def _changed(interrupt_id: str, review: ReviewRequest, pending: Sequence[ToolCall]) -> str:
    asked = "; ".join(_describe(a.name, a.args) for a in review.action_requests)
    now = "; ".join(_describe(c.name, c.args) for c in pending) or "none"
    return (
        f"The answer to review {interrupt_id} cannot be applied: it was asked about [{asked}], "
        f"but the agent's pending tool calls are now [{now}]. The conversation changed since "
        "the pause (a state update, or another model reply). Nothing was consumed and the "
        "thread is still paused on the same review: restore the reviewed tool calls in the "
        "state and resume again, or start a new run with new input to discard the review."
    )


def _describe(name: str, args: Mapping[str, Any]) -> str:
    text = f"{name} {canonical_json(dict(args))}"
    return text if len(text) <= 200 else text[:197] + "..."


__all__ = [
    "BINDING_REFUSAL_TEMPLATE",
    "CHECKPOINTER_ADVICE",
    "DEFAULT_DESCRIPTION_PREFIX",
    "HumanInTheLoop",
    "InterruptMode",
]
