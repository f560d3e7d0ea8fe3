"""Subagents: agents the parent delegates to through its `task` tool.

The `task` tool runs the subagent as a nested graph inside the tool call's own task, so
its checkpoints live under that task's namespace in the parent's thread. A review raised
inside the subagent surfaces on the parent run with the usual `Interrupted` shape and is
answered with the parent's thread config; on resume the subagent continues from its own
checkpoint, so its reviewed tool runs exactly once.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from beamweaver_core.agent.state import MESSAGES, last_assistant
from beamweaver_core.agent.tools import Tool, ToolRuntime
from beamweaver_core.agent.toolsets import ToolLike, as_tool
from beamweaver_core.graph import CompiledGraph
from beamweaver_core.messages import Message

if TYPE_CHECKING:
    from beamweaver_core.agent.hitl import HumanInTheLoop
    from beamweaver_core.agent.review_policy import PolicyValue
    from beamweaver_core.llm.base import ChatModel

TASK_TOOL_NAME = "task"


class GraphSource(Protocol):
    """An agent (instance or module-style class): anything with `graph_for()`."""

    def graph_for(self) -> CompiledGraph:
        """The agent's compiled graph."""


@dataclass(frozen=True, slots=True)
class SubagentSpec:
    """A subagent built from parts. Without `model` it uses the parent's model.

    Without `interrupt_on` it inherits the parent's review policy, however the parent
    declared it: the parent's `interrupt_on`, and each `HumanInTheLoop` in the parent's
    `middleware` (with its options: description prefix, interrupt mode, schemas),
    restricted to the tools this subagent has. With `interrupt_on` (even `{}`), only its
    own policy applies. Its reviews surface on the parent run and are resumed with the
    parent's thread config.
    """

    name: str
    description: str
    system_prompt: str
    tools: Sequence[ToolLike] = ()
    interrupt_on: Mapping[str, PolicyValue] | None = None
    model: ChatModel | None = None


@dataclass(frozen=True, slots=True)
class CompiledSubagent:
    """A ready agent used as given (its own review policy, nothing inherited). `agent` is
    an `Agent`, a module-style `Agent` subclass, or a compiled agent graph."""

    name: str
    description: str
    agent: GraphSource | CompiledGraph


class TaskTool(Tool):
    """`task(description, subagent_type)`: run a subagent on a task, return its answer."""

    name = TASK_TOOL_NAME
    # A failing subagent fails the run like any nested graph (and an invalid review answer
    # inside it must stay unconsumed); only invalid arguments go back to the model.
    handle_errors = False

    def __init__(
        self, graphs: Mapping[str, CompiledGraph], descriptions: Mapping[str, str]
    ) -> None:
        self.graphs = dict(graphs)
        listing = "\n".join(f"- {name}: {text}" for name, text in descriptions.items())
        self.description = (
            "Delegate a task to a subagent that works on it on its own and returns its final "
            "answer. Describe the task completely: the subagent sees only this description.\n"
            f"Available subagents:\n{listing}"
        )
        self.args_schema = {
            "type": "object",
            "properties": {
                "description": {
                    "type": "string",
                    "description": "The complete task for the subagent.",
                },
                "subagent_type": {
                    "type": "string",
                    "enum": list(self.graphs),
                    "description": "Which subagent runs the task.",
                },
            },
            "required": ["description", "subagent_type"],
            "additionalProperties": False,
        }

    def run(self, args: dict[str, Any], runtime: ToolRuntime) -> str:
        """Run the chosen subagent as a nested graph of this tool call's task."""
        graph = self.graphs[args["subagent_type"]]
        result = graph.invoke({MESSAGES: [Message.user(args["description"])]})
        answer = last_assistant(result.state.get(MESSAGES) or ())
        return answer.content if answer is not None else ""


def task_tool(
    subagents: Sequence[SubagentSpec | CompiledSubagent],
    *,
    model: ChatModel,
    interrupt_on: Mapping[str, PolicyValue] | None,
    review: Sequence[HumanInTheLoop] = (),
    make_agent: Callable[..., GraphSource],
) -> TaskTool:
    """The parent's `task` tool over `subagents` (specs are built with the parent's
    `model` and review policy, its `interrupt_on` and `HumanInTheLoop` middleware
    `review`, unless they set their own). `make_agent` builds an agent from the
    `Agent` options of a spec (the parent passes `Agent`: an agent's subagents are
    agents)."""
    graphs: dict[str, CompiledGraph] = {}
    descriptions: dict[str, str] = {}
    for sub in subagents:
        if sub.name in graphs:
            raise ValueError(
                f"Two subagents are named {sub.name!r}; subagent names must be unique."
            )
        if isinstance(sub, SubagentSpec):
            own = sub.interrupt_on
            inherited: tuple[HumanInTheLoop, ...] = ()
            if own is None:
                names = _tool_names(sub)
                own = {k: v for k, v in (interrupt_on or {}).items() if k in names}
                inherited = tuple(
                    m for m in (mw.restricted_to(names) for mw in review) if m is not None
                )
            agent = make_agent(
                model=sub.model if sub.model is not None else model,
                tools=sub.tools,
                interrupt_on=own,
                middleware=inherited,
                system_prompt=sub.system_prompt,
                name=sub.name,
            )
            graphs[sub.name] = agent.graph_for()
        elif isinstance(sub, CompiledSubagent):
            graphs[sub.name] = _as_graph(sub.agent)
        else:
            raise TypeError(f"{sub!r} is not a subagent: use SubagentSpec or CompiledSubagent.")
        descriptions[sub.name] = sub.description
    return TaskTool(graphs, descriptions)


def inherited_tool_names(subagents: Sequence[SubagentSpec | CompiledSubagent]) -> set[str]:
    """The tools of the subagent specs that inherit the parent's review policy: names the
    parent's policy may review although the parent itself lacks them."""
    names: set[str] = set()
    for sub in subagents:
        if isinstance(sub, SubagentSpec) and sub.interrupt_on is None:
            names |= _tool_names(sub)
    return names


def _tool_names(sub: SubagentSpec) -> set[str]:
    return {as_tool(t).name for t in sub.tools}


def _as_graph(agent: GraphSource | CompiledGraph) -> CompiledGraph:
    if isinstance(agent, CompiledGraph):
        return agent
    return agent.graph_for()


__all__ = [
    "TASK_TOOL_NAME",
    "CompiledSubagent",
    "GraphSource",
    "SubagentSpec",
    "TaskTool",
    "inherited_tool_names",
    "task_tool",
]
