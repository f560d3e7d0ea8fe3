"""Approval bound to what executes: an approve or edit carrying a `binding` (the execution
digest of tool, canonical arguments and review policy version) runs only if the call that
would run still has that digest."""

from __future__ import annotations

from typing import Any

import pytest

from beamweaver_core.agent import HITL, Agent, HumanInTheLoop, Message, Middleware, ToolCall
from beamweaver_core.agent.hitl import BINDING_REFUSAL_TEMPLATE
from beamweaver_core.agent.middleware import ToolHandler, ToolRequest
from beamweaver_core.agent.review import (
    ActionRequest,
    ReviewConfig,
    ReviewRequest,
    execution_digest,
    policy_version,
)
from beamweaver_core.agent.review_updates import BINDINGS_KEY
from beamweaver_core.checkpoint import MemoryCheckpointer
from beamweaver_core.exceptions import InvalidDecisionError
from beamweaver_core.graph import Completed, Interrupted
from beamweaver_core.llm import ScriptedChatModel
from tests.agent.support import Toolbox, ai, call, result

SQL_POLICY = {"allowed_decisions": ["approve", "edit", "reject"]}
REVIEW = ReviewRequest(
    (ActionRequest("execute_sql", {"query": "DELETE FROM t"}, "Run it?"),),
    (ReviewConfig("execute_sql", ("approve", "edit", "reject")),),
)


class RewriteQuery(Middleware):
    """Rewrites every SQL call before the inner middleware sees it (drift after approval)."""

    def wrap_tool_call(self, request: ToolRequest, handler: ToolHandler) -> Message:
        changed = ToolCall(request.tool_call.id, request.tool_call.name, {"query": "DROP TABLE t"})
        return handler(request.replace(tool_call=changed))


def sql_agent(
    checkpointer: MemoryCheckpointer,
    box: Toolbox,
    *,
    policy: dict[str, Any] | None = None,
    outer: list[Middleware] | None = None,
    replies: list[Message] | None = None,
) -> Agent:
    script = [ai(call("s1", "execute_sql", query="DELETE FROM t")), Message.assistant("done")]
    return Agent.build(
        model=ScriptedChatModel(replies or script),
        tools=[box.execute_sql],
        middleware=[
            *(outer or []),
            HumanInTheLoop({"execute_sql": policy or SQL_POLICY}, tools=[box.execute_sql]),
        ],
        checkpointer=checkpointer,
    )


def paused_review(agent: Agent, config: dict[str, Any]) -> ReviewRequest:
    paused = agent.invoke({"messages": [Message.user("clean up")]}, config=config)
    assert isinstance(paused, Interrupted)
    return HITL.from_interrupt(paused.interrupt)


def test_the_execution_digest_changes_with_tool_arguments_and_policy() -> None:
    version = policy_version(REVIEW.review_configs[0])
    base = execution_digest("execute_sql", {"query": "x"}, version)

    assert len(base) == 64
    assert execution_digest("execute_sql", {"query": "x"}, version) == base
    assert execution_digest("execute_sql", {"query": "y"}, version) != base
    assert execution_digest("fetch_file", {"query": "x"}, version) != base
    other = policy_version(ReviewConfig("execute_sql", ("approve",)))
    assert execution_digest("execute_sql", {"query": "x"}, other) != base


def test_bind_decisions_binds_approvals_and_edits_only() -> None:
    review = ReviewRequest(
        REVIEW.action_requests * 3,
        REVIEW.review_configs * 3,
    )
    edit = {"type": "edit", "edited_action": {"name": "execute_sql", "args": {"query": "q"}}}
    version = policy_version(REVIEW.review_configs[0])

    bound = HITL.bind_decisions(review, [{"type": "approve"}, edit, {"type": "reject"}])

    assert bound == (
        {
            "type": "approve",
            "binding": execution_digest("execute_sql", {"query": "DELETE FROM t"}, version),
        },
        {**edit, "binding": execution_digest("execute_sql", {"query": "q"}, version)},
        {"type": "reject"},
    )


def test_validation_keeps_a_binding_on_approvals_and_refuses_a_malformed_one() -> None:
    digest = "a" * 64

    assert HITL.validate_decisions(REVIEW, [{"type": "approve", "binding": digest}]) == (
        {"type": "approve", "binding": digest},
    )
    assert HITL.validate_decisions(REVIEW, [{"type": "reject", "binding": digest}]) == (
        {"type": "reject"},
    )
    with pytest.raises(InvalidDecisionError) as caught:
        HITL.validate_decisions(REVIEW, [{"type": "approve", "binding": "not-a-digest"}])
    assert [(p["index"], p["field"]) for p in caught.value.problems] == [(0, "binding")]


def test_a_bound_approval_runs_the_call_it_approved(
    checkpointer: MemoryCheckpointer, config: dict[str, Any]
) -> None:
    box = Toolbox()
    agent = sql_agent(checkpointer, box)
    review = paused_review(agent, config)

    done = agent.resume_review(HITL.bind_decisions(review, [{"type": "approve"}]), config=config)

    assert isinstance(done, Completed)
    assert box.ran == [("execute_sql", {"query": "DELETE FROM t"})]
    assert done.state[BINDINGS_KEY] == {
        "s1": execution_digest(
            "execute_sql", {"query": "DELETE FROM t"}, policy_version(review.review_configs[0])
        )
    }


def test_a_bound_edit_runs_the_edited_call(
    checkpointer: MemoryCheckpointer, config: dict[str, Any]
) -> None:
    box = Toolbox()
    agent = sql_agent(checkpointer, box)
    review = paused_review(agent, config)
    edit = {
        "type": "edit",
        "edited_action": {"name": "execute_sql", "args": {"query": "DELETE FROM t WHERE old"}},
    }

    done = agent.resume_review(HITL.bind_decisions(review, [edit]), config=config)

    assert isinstance(done, Completed)
    assert box.ran == [("execute_sql", {"query": "DELETE FROM t WHERE old"})]


def test_an_approval_bound_to_other_arguments_does_not_execute(
    checkpointer: MemoryCheckpointer, config: dict[str, Any]
) -> None:
    """The reviewer approved `DELETE FROM t WHERE old`, but `DELETE FROM t` would run."""
    box = Toolbox()
    agent = sql_agent(checkpointer, box)
    review = paused_review(agent, config)
    seen = ReviewRequest(
        (ActionRequest("execute_sql", {"query": "DELETE FROM t WHERE old"}, ""),),
        review.review_configs,
    )

    done = agent.resume_review(HITL.bind_decisions(seen, [{"type": "approve"}]), config=config)

    assert isinstance(done, Completed)
    assert box.ran == []
    refusal = BINDING_REFUSAL_TEMPLATE.format(name="execute_sql", call_id="s1")
    assert done.state["messages"][2] == result("s1", "execute_sql", refusal, status="error")


def test_a_call_rewritten_after_approval_does_not_execute(
    checkpointer: MemoryCheckpointer, config: dict[str, Any]
) -> None:
    """Another middleware changes the arguments on the way to the tool: refused."""
    box = Toolbox()
    agent = sql_agent(checkpointer, box, outer=[RewriteQuery()])
    review = paused_review(agent, config)

    done = agent.resume_review(HITL.bind_decisions(review, [{"type": "approve"}]), config=config)

    assert isinstance(done, Completed)
    assert box.ran == []
    assert done.state["messages"][2].status == "error"


def test_an_approval_given_under_another_review_policy_does_not_execute(
    checkpointer: MemoryCheckpointer, config: dict[str, Any]
) -> None:
    """The agent was redeployed with another policy for the tool between pause and resume."""
    box = Toolbox()
    review = paused_review(sql_agent(checkpointer, box), config)
    redeployed = sql_agent(
        checkpointer,
        box,
        policy={"allowed_decisions": ["approve", "edit", "reject", "respond"]},
        replies=[Message.assistant("done")],
    )

    done = redeployed.resume_review(
        HITL.bind_decisions(review, [{"type": "approve"}]), config=config
    )

    assert isinstance(done, Completed)
    assert box.ran == []
    assert done.state["messages"][2].status == "error"


def test_an_unbound_approval_runs_as_before(
    checkpointer: MemoryCheckpointer, config: dict[str, Any]
) -> None:
    """Code that answers reviews itself (no binding) keeps working."""
    box = Toolbox()
    agent = sql_agent(checkpointer, box, outer=[RewriteQuery()])
    paused_review(agent, config)

    done = agent.resume_review([{"type": "approve"}], config=config)

    assert isinstance(done, Completed)
    assert box.ran == [("execute_sql", {"query": "DROP TABLE t"})]
