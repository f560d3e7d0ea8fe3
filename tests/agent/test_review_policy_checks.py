"""Review policies that cannot be silently wrong (issue 12, point 2, and the checkpointer
message): a policy naming no tool of the agent fails the build, a decision with unknown
keys is refused without consuming anything, and an agent that must pause without a
checkpointer is told how to give it one."""

from __future__ import annotations

from typing import Any

import pytest

from beamweaver_core.agent import Agent, HumanInTheLoop, Message, SubagentSpec
from beamweaver_core.checkpoint import MemoryCheckpointer
from beamweaver_core.exceptions import (
    CheckpointerRequiredError,
    GraphDefinitionError,
    InvalidDecisionError,
)
from beamweaver_core.graph import Completed, Interrupted
from beamweaver_core.llm import ScriptedChatModel
from tests.agent.support import Toolbox, ai, call


def test_an_interrupt_on_key_naming_no_tool_fails_the_build_with_a_suggestion() -> None:
    """The issue's typo: `exec_sql_typo` would leave `execute_sql` unreviewed."""
    box = Toolbox()

    with pytest.raises(GraphDefinitionError) as failed:
        Agent.build(
            model=ScriptedChatModel([]),
            tools=[box.execute_sql, box.read_data],
            interrupt_on={"exec_sql_typo": True, "read_data": False},
        )

    text = str(failed.value)
    assert "'exec_sql_typo'" in text
    assert "did you mean 'execute_sql'?" in text
    assert "known tools: ['execute_sql', 'read_data']" in text


def test_a_human_in_the_loop_map_key_naming_no_tool_fails_when_the_agent_is_built() -> None:
    """A middleware built without the agent's tools is checked when the agent is built;
    `False` entries count too (a typo there hides nothing today, but it is still a typo)."""
    box = Toolbox()
    review = HumanInTheLoop({"write_fle": True, "read_dta": False})

    with pytest.raises(GraphDefinitionError) as failed:
        Agent.build(
            model=ScriptedChatModel([]), tools=[box.write_file, box.read_data], middleware=[review]
        )

    assert len(failed.value.problems) == 2
    assert "did you mean 'write_file'?" in failed.value.problems[1]
    assert "did you mean 'read_data'?" in failed.value.problems[0]


def test_a_module_style_agent_with_a_typo_fails_on_first_use() -> None:
    box = Toolbox()

    class Typo(Agent):
        model = ScriptedChatModel([])
        tools = [box.remove_file]
        interrupt_on = {"delete_file": True}

    with pytest.raises(
        GraphDefinitionError, match=r"'delete_file'.*known tools: \['remove_file'\]"
    ):
        Typo.invoke(
            {"messages": [Message.user("x")]},
            checkpointer=MemoryCheckpointer(),
            config={"configurable": {"thread_id": "t"}},
        )


def test_subagent_and_task_tools_count_as_known() -> None:
    """The parent's policy is inherited by subagent specs, so it may name their tools; the
    `task` tool the subagents add can be reviewed too. A name no agent has still fails."""
    box = Toolbox()
    spec = SubagentSpec(
        name="cleaner",
        description="Cleans files.",
        system_prompt="Clean.",
        tools=[box.remove_file],
    )
    Agent.build(
        model=ScriptedChatModel([]),
        tools=[box.read_data],
        interrupt_on={"remove_file": True, "task": {"allowed_decisions": ["approve", "reject"]}},
        subagents=[spec],
    )
    with pytest.raises(GraphDefinitionError, match=r"'remove_fiel'.*did you mean 'remove_file'"):
        Agent.build(
            model=ScriptedChatModel([]),
            tools=[box.read_data],
            interrupt_on={"remove_fiel": True},
            subagents=[spec],
        )


def test_a_subagent_with_its_own_policy_is_checked_against_its_own_tools() -> None:
    box = Toolbox()
    with pytest.raises(GraphDefinitionError, match="'remove_fil'"):
        Agent.build(
            model=ScriptedChatModel([]),
            tools=[box.read_data],
            subagents=[
                SubagentSpec(
                    name="cleaner",
                    description="Cleans files.",
                    system_prompt="Clean.",
                    tools=[box.remove_file],
                    interrupt_on={"remove_fil": True},
                )
            ],
        )


@pytest.mark.parametrize(
    ("decision", "field"),
    [
        ({"type": "approve", "argz": {"query": "SELECT 2"}}, "argz"),
        ({"type": "reject", "mesage": "no"}, "mesage"),
        (
            {
                "type": "edit",
                "edited_action": {"name": "execute_sql", "args": {"query": "SELECT 2"}, "argz": {}},
            },
            "edited_action.argz",
        ),
    ],
)
def test_a_decision_with_unknown_keys_is_refused_and_nothing_is_consumed(
    decision: dict[str, Any], field: str, checkpointer: MemoryCheckpointer, config: dict[str, Any]
) -> None:
    box = Toolbox()
    agent = Agent.build(
        model=ScriptedChatModel(
            [ai(call("q1", "execute_sql", query="SELECT 1")), Message.assistant("ok")]
        ),
        tools=[box.execute_sql],
        interrupt_on={"execute_sql": True},
        checkpointer=checkpointer,
    )
    paused = agent.invoke({"messages": [Message.user("q")]}, config=config)
    assert isinstance(paused, Interrupted)

    with pytest.raises(InvalidDecisionError) as refused:
        agent.resume_review([decision], config=config)

    assert [p["field"] for p in refused.value.problems] == [field]
    assert "unknown key" in refused.value.problems[0]["message"]
    assert box.ran == []
    assert agent.get_state(config).interrupts == paused.interrupts
    done = agent.resume_review([{"type": "approve"}], config=config)
    assert isinstance(done, Completed)
    assert box.ran == [("execute_sql", {"query": "SELECT 1"})]


def test_an_agent_without_a_checkpointer_is_told_how_to_give_it_one() -> None:
    box = Toolbox()
    agent = Agent.build(
        model=ScriptedChatModel([ai(call("r1", "remove_file", path="a"))]),
        tools=[box.remove_file],
        interrupt_on={"remove_file": True},
    )

    with pytest.raises(CheckpointerRequiredError) as failed:
        agent.invoke({"messages": [Message.user("rm a")]})

    text = str(failed.value)
    assert "Agent.build(..., checkpointer=" in text
    assert "graph.compile(" not in text
    assert box.ran == []


def test_resuming_or_reading_an_agent_without_a_checkpointer_says_how_to_give_it_one() -> None:
    box = Toolbox()
    agent = Agent.build(model=ScriptedChatModel([]), tools=[box.remove_file], name="Cleaner")
    config = {"configurable": {"thread_id": "t"}}

    for attempt in (
        lambda: agent.resume({"decisions": [{"type": "approve"}]}, config=config),
        lambda: agent.resume_review([{"type": "approve"}], config=config),
        lambda: agent.get_state(config),
    ):
        with pytest.raises(
            CheckpointerRequiredError, match="Agent 'Cleaner' has no checkpointer"
        ) as failed:
            attempt()
        assert "Agent.build(..., checkpointer=" in str(failed.value)
