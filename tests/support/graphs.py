"""Graphs registered in the tests' settings (`TEST_GRAPHS`), also loadable by child
processes through `BEAMWEAVER_GRAPHS`."""

from __future__ import annotations

import operator
import os
import time
from pathlib import Path
from typing import Any

from beamweaver_core.graph import START, Graph, interrupt

TEST_GRAPHS = {
    "approval": "tests.support.graphs:approval",
    "steps": "tests.support.graphs:steps",
    "explode": "tests.support.graphs:explode",
    "pair": "tests.support.graphs:pair",
    "contextual": "tests.support.graphs:contextual",
    "siblings": "tests.support.graphs:siblings",
}


def ledger(name: str) -> None:
    """Record a side effect: one line in $BEAMWEAVER_TEST_LEDGER per execution."""
    path = os.environ.get("BEAMWEAVER_TEST_LEDGER")
    if path:
        with Path(path).open("a") as out:
            out.write(f"{name}\n")


def _ask(state: dict[str, Any]) -> dict[str, Any]:
    approved = interrupt({"question": "Approve?", "amount": state.get("amount")})
    return {"approved": approved}


def _finish(state: dict[str, Any]) -> dict[str, Any]:
    ledger(f"finish:{state['approved']}")
    return {"done": True}


approval = (
    Graph(name="approval")
    .add_node("ask", _ask)
    .add_node("finish", _finish)
    .add_edge(START, "ask")
    .add_edge("ask", "finish")
    .compile()
)


def _wait_for(path: str) -> None:
    deadline = time.monotonic() + 60
    while not Path(path).exists() and time.monotonic() < deadline:
        time.sleep(0.05)


def _step(i: int) -> Any:
    def node(state: dict[str, Any]) -> dict[str, Any]:
        ledger(f"step:{i}")
        time.sleep(float(os.environ.get("BEAMWEAVER_TEST_STEP_SECONDS", "0")))
        gate = os.environ.get("BEAMWEAVER_TEST_GATE")
        if gate and i >= 2:
            # Steps past the second wait (bounded) for the test to open the gate: a run
            # is then surely under way across whatever the test does meanwhile.
            _wait_for(gate)
        hold = os.environ.get("BEAMWEAVER_TEST_HOLD")
        if hold and i == 4:
            # A second gate, for step 4 only: a test that must see step 4 running holds
            # it there instead of racing a sleep.
            _wait_for(hold)
        return {"log": [i]}

    return node


def _build_steps() -> Any:
    builder = Graph(name="steps").add_reducer("log", operator.add)
    count = 6
    for i in range(count):
        builder.add_node(f"s{i}", _step(i))
    builder.add_edge(START, "s0")
    for i in range(count - 1):
        builder.add_edge(f"s{i}", f"s{i + 1}")
    return builder.compile()


steps = _build_steps()


def _explode(state: dict[str, Any]) -> dict[str, Any]:
    raise RuntimeError("the tool backend is down (api_key=sk-test-0123456789abcdefghij)")


explode = Graph(name="explode").add_node("explode", _explode).add_edge(START, "explode").compile()

pair = (
    Graph(name="pair")
    .add_reducer("answers", operator.add)
    .add_node("left", lambda s: {"answers": [f"left:{interrupt('left?')}"]})
    .add_node("right", lambda s: {"answers": [f"right:{interrupt('right?')}"]})
    .add_edge(START, "left")
    .add_edge(START, "right")
    .compile()
)


def _ask_in_context(state: dict[str, Any], runtime: Any) -> dict[str, Any]:
    answer = interrupt({"question": "Go on?", "context": runtime.context})
    return {"asked_in": runtime.context, "answer": answer}


def _finish_in_context(state: dict[str, Any], runtime: Any) -> dict[str, Any]:
    return {"finished_in": runtime.context}


contextual = (
    Graph(name="contextual")
    .add_node("ask", _ask_in_context)
    .add_node("finish", _finish_in_context)
    .add_edge(START, "ask")
    .add_edge("ask", "finish")
    .compile()
)
"""Shows the run's `runtime.context`: in its question, and in the state of each node."""


def _sibling(name: str) -> Any:
    def node(state: dict[str, Any]) -> dict[str, Any]:
        ledger(name)
        return {"done": [name]}

    return node


def _slow_sibling(state: dict[str, Any]) -> dict[str, Any]:
    """Runs until $BEAMWEAVER_TEST_RELEASE exists (at most a minute): the step stays open."""
    ledger("slow")
    release = os.environ.get("BEAMWEAVER_TEST_RELEASE")
    deadline = time.monotonic() + 60
    while release and not Path(release).exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    return {"done": ["slow"]}


def _join(state: dict[str, Any]) -> dict[str, Any]:
    ledger("join")
    return {"joined": sorted(state["done"])}


def _build_siblings() -> Any:
    builder = Graph(name="siblings").add_reducer("done", operator.add)
    names = ["fast_a", "fast_b", "slow"]
    for name in names:
        builder.add_node(name, _slow_sibling if name == "slow" else _sibling(name))
        builder.add_edge(START, name)
    builder.add_node("join", _join)
    builder.add_edge(names, "join")
    return builder.compile()


siblings = _build_siblings()
"""Three parallel tasks, two fast and one that waits to be released, then a join."""
