"""Every graph example of the BeamWeaver guide (shared/seed), in Python."""

from __future__ import annotations

from typing import Any

from beamweaver_core.checkpoint import MemoryCheckpointer
from beamweaver_core.graph import (
    END,
    START,
    Command,
    Completed,
    Graph,
    Interrupted,
    interrupt,
    null_resume,
)


def approval_node(state: dict[str, Any]) -> dict[str, Any]:
    approved = interrupt({"question": "Approve this action?", "details": state["action_details"]})
    return {"approved": approved}


def approval_flow(checkpointer: MemoryCheckpointer) -> Any:
    return (
        Graph(name="ApprovalFlow")
        .add_node("approval", approval_node)
        .add_edge(START, "approval")
        .add_edge("approval", END)
        .compile(checkpointer=checkpointer)
    )


def test_pause_using_interrupt_and_resume(checkpointer: MemoryCheckpointer) -> None:
    """Resuming Interrupts: the caller gets the payload; the resume value is interrupt()'s return."""
    config = {"configurable": {"thread_id": "approval-1"}}
    graph = approval_flow(checkpointer)

    result = graph.invoke({"action_details": "Transfer $500"}, config=config)

    assert isinstance(result, Interrupted)
    assert result.interrupt.value == {
        "question": "Approve this action?",
        "details": "Transfer $500",
    }
    assert result.interrupt.node == "approval"
    assert result.interrupt.timing is None
    result = graph.resume(True, config=config)
    assert result == Completed(state={"action_details": "Transfer $500", "approved": True})


def test_null_resume_answers_none(checkpointer: MemoryCheckpointer) -> None:
    config = {"configurable": {"thread_id": "approval-null"}}
    graph = approval_flow(checkpointer)
    graph.invoke({"action_details": "Transfer $500"}, config=config)

    result = graph.resume(null_resume(), config=config)

    assert result == Completed(state={"action_details": "Transfer $500", "approved": None})


def test_command_resume_as_input_is_the_same_as_resume(checkpointer: MemoryCheckpointer) -> None:
    config = {"configurable": {"thread_id": "approval-cmd"}}
    graph = approval_flow(checkpointer)
    graph.invoke({"action_details": "x"}, config=config)

    assert graph.invoke(Command(resume="yes"), config=config).state["approved"] == "yes"


def test_handling_multiple_interrupts_with_a_map_from_get_state(
    checkpointer: MemoryCheckpointer,
) -> None:
    """Handling Multiple Interrupts: parallel branches pause in one step; resume by id map."""
    config = {"configurable": {"thread_id": "parallel"}}
    graph = (
        Graph(name="ParallelQuestions")
        .add_reducer("answers", lambda existing, update: existing + list(update))
        .add_node("left", lambda _: {"answers": [f"a:{interrupt('question_a')}"]})
        .add_node("right", lambda _: {"answers": [f"b:{interrupt('question_b')}"]})
        .add_edge(START, "left")
        .add_edge(START, "right")
        .add_edge("left", END)
        .add_edge("right", END)
        .compile(checkpointer=checkpointer)
    )
    assert isinstance(graph.invoke({"answers": []}, config=config), Interrupted)
    snapshot = graph.get_state(config)

    resume_values = {i.id: f"answer for {i.value}" for i in snapshot.interrupts}
    result = graph.resume(resume_values, config=config)

    assert result == Completed(
        state={"answers": ["a:answer for question_a", "b:answer for question_b"]}
    )


def test_approve_or_cancel_a_branch_with_command_goto(checkpointer: MemoryCheckpointer) -> None:
    def approval(state: dict[str, Any]) -> Command:
        decision = interrupt({"question": "Proceed?", "details": state["action_details"]})
        return Command(goto="proceed" if decision else "cancel")

    graph = (
        Graph()
        .add_node("approval", approval)
        .add_node("proceed", lambda _: {"outcome": "proceeded"})
        .add_node("cancel", lambda _: {"outcome": "cancelled"})
        .add_edge(START, "approval")
        .compile(checkpointer=checkpointer)
    )
    yes = {"configurable": {"thread_id": "yes"}}
    no = {"configurable": {"thread_id": "no"}}
    graph.invoke({"action_details": "deploy"}, yes)
    graph.invoke({"action_details": "deploy"}, no)

    assert graph.resume(True, yes).state["outcome"] == "proceeded"
    assert graph.resume(False, no).state["outcome"] == "cancelled"


def test_review_and_edit_generated_state(checkpointer: MemoryCheckpointer) -> None:
    def review(state: dict[str, Any]) -> dict[str, Any]:
        edited = interrupt(
            {"instruction": "Review and edit this draft", "content": state["generated_text"]}
        )
        return {"generated_text": edited}

    graph = (
        Graph()
        .add_node("review", review)
        .add_edge(START, "review")
        .compile(checkpointer=checkpointer)
    )
    config = {"configurable": {"thread_id": "draft"}}
    paused = graph.invoke({"generated_text": "helo wrld"}, config)

    assert paused.interrupt.value == {
        "instruction": "Review and edit this draft",
        "content": "helo wrld",
    }
    assert graph.resume("hello world", config).state == {"generated_text": "hello world"}


def test_validate_human_input_by_interrupting_again(checkpointer: MemoryCheckpointer) -> None:
    def age_node(_: dict[str, Any]) -> dict[str, Any]:
        prompt = "What is your age?"
        while True:
            answer = interrupt(prompt)
            if isinstance(answer, int) and answer > 0:
                return {"age": answer}
            prompt = f"'{answer}' is not a valid age. Please enter a positive number."

    graph = (
        Graph().add_node("age", age_node).add_edge(START, "age").compile(checkpointer=checkpointer)
    )
    config = {"configurable": {"thread_id": "age"}}

    first = graph.invoke({}, config)
    second = graph.resume("forty", config)
    third = graph.resume(-3, config)
    done = graph.resume(42, config)

    assert first.interrupt.value == "What is your age?"
    assert second.interrupt.value == "'forty' is not a valid age. Please enter a positive number."
    assert third.interrupt.value == "'-3' is not a valid age. Please enter a positive number."
    assert len({first.interrupt.id, second.interrupt.id, third.interrupt.id}) == 3
    assert done == Completed(state={"age": 42})


def test_catching_exceptions_cannot_swallow_the_interrupt_signal(
    checkpointer: MemoryCheckpointer,
) -> None:
    """Rules Of Interrupts: the signal is not an Exception, so `except Exception` lets it pass."""

    def risky(_: dict[str, Any]) -> dict[str, Any]:
        try:
            interrupt("Approve?")
        except Exception:
            return {"error": "caught graph control signal"}
        return {"approved": True}

    graph = (
        Graph().add_node("risky", risky).add_edge(START, "risky").compile(checkpointer=checkpointer)
    )
    config = {"configurable": {"thread_id": "risky"}}

    assert isinstance(graph.invoke({}, config), Interrupted)
    assert graph.resume("yes", config).state == {"approved": True}


def test_interrupt_order_is_matched_by_position_within_the_node(
    checkpointer: MemoryCheckpointer,
) -> None:
    executions: list[str] = []

    def form(_: dict[str, Any]) -> dict[str, Any]:
        executions.append("start")
        name = interrupt("What is your name?")
        age = interrupt("What is your age?")
        city = interrupt("What is your city?")
        return {"name": name, "age": age, "city": city}

    graph = (
        Graph().add_node("form", form).add_edge(START, "form").compile(checkpointer=checkpointer)
    )
    config = {"configurable": {"thread_id": "form"}}
    questions = [graph.invoke({}, config).interrupt.value]
    questions.append(graph.resume("Ada", config).interrupt.value)
    questions.append(graph.resume(36, config).interrupt.value)
    done = graph.resume("London", config)

    assert questions == ["What is your name?", "What is your age?", "What is your city?"]
    assert done.state == {"name": "Ada", "age": 36, "city": "London"}
    assert executions == ["start"] * 4  # the node restarts from its beginning on each resume


def test_side_effects_after_the_interrupt_run_once(checkpointer: MemoryCheckpointer) -> None:
    """Make Earlier Side Effects Idempotent: the safer shape upserts after the interrupt."""
    audit: dict[str, Any] = {}

    def node(state: dict[str, Any]) -> dict[str, Any]:
        approved = interrupt("Create audit log?")
        if approved:
            audit[state["event_id"]] = state["audit_payload"]
        return {"approved": approved}

    graph = (
        Graph().add_node("audit", node).add_edge(START, "audit").compile(checkpointer=checkpointer)
    )
    config = {"configurable": {"thread_id": "audit"}}
    graph.invoke({"event_id": "e1", "audit_payload": {"who": "ada"}}, config)
    graph.resume(True, config)

    assert audit == {"e1": {"who": "ada"}}


def test_using_with_subgraphs_resumes_with_the_parent_config(
    checkpointer: MemoryCheckpointer,
) -> None:
    child = (
        Graph(name="child")
        .add_node("ask", lambda _: {"child_answer": interrupt("child question")})
        .add_edge(START, "ask")
        .compile()
    )
    parent = (
        Graph(name="parent")
        .add_node("child", child)
        .add_node("after", lambda s: {"summary": f"child said {s['child_answer']}"})
        .add_edge(START, "child")
        .add_edge("child", "after")
        .compile(checkpointer=checkpointer)
    )
    config = {"configurable": {"thread_id": "parent"}}
    interrupted = parent.invoke({}, config)

    result = parent.resume({interrupted.interrupt.id: "approved"}, config)

    assert interrupted.interrupt.value == "child question"
    assert result.state == {"child_answer": "approved", "summary": "child said approved"}


def test_static_breakpoints(checkpointer: MemoryCheckpointer) -> None:
    graph = (
        Graph(name="DebuggableFlow")
        .add_node("load", lambda s: {"loaded": s["input"].upper()})
        .add_node("process", lambda s: {"processed": s["loaded"] + "!"})
        .add_edge("load", "process")
        .add_edge(START, "load")
        .add_edge("process", END)
        .compile(checkpointer=checkpointer, interrupt_before=["process"])
    )
    config = {"configurable": {"thread_id": "debug"}}

    breakpoint = graph.invoke({"input": "data"}, config=config)

    assert isinstance(breakpoint, Interrupted)
    assert breakpoint.interrupt.timing == "before"
    assert breakpoint.interrupt.node == "process"
    assert breakpoint.state == {"input": "data", "loaded": "DATA"}
    assert graph.resume(None, config=config) == Completed(
        state={"input": "data", "loaded": "DATA", "processed": "DATA!"}
    )
