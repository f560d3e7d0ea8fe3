"""What makes one thread of the big database different from another: its tokens.

A thread the runtime wrote is a set of rows whose text carries a handful of values
(`Base`): the thread id, the customer and order of its input, its run ids, checkpoint
ids, the client decision id and its review item's id. Everything else that differs
between threads is derived from those by the product's own functions, and is computed
here with them: task ids (`graph.checkpoints.task_id` of the checkpoint id and node), the
interrupt id (`graph.interrupts.interrupt_id` of the task's namespace), the payload's
canonical text and digest (`reviews.payloads`), the approval's execution digest
(`HITL.bind_decisions`). `tokens(base)` lists them in one fixed order, so the bulk path can
replace a template's tokens with a clone's, position by position.
"""

from __future__ import annotations

import os
import uuid
from dataclasses import dataclass, field
from typing import Any

NODES = ("propose", "act")
"""The scale graphs' nodes, in the order their checkpoints schedule them."""


@dataclass(frozen=True, slots=True)
class Base:
    """The values of one thread that nothing else derives from."""

    graph: str
    decided: bool
    thread_id: str
    customer: str
    order: str
    run_ids: tuple[str, ...]
    checkpoint_ids: tuple[str, ...]
    client_decision_ids: tuple[str, ...] = ()
    item_id: int = 0
    extra: dict[str, Any] = field(default_factory=dict)


def shape(decided: bool) -> tuple[int, int]:
    """(runs, root checkpoints) of a paused or a decided thread of a scale graph."""
    return (2, 3) if decided else (1, 1)


def new_base(graph: str, decided: bool, customer: str, order: str, item_id: int) -> Base:
    """A fresh thread's base values, random where the runtime picks them at random."""
    runs, checkpoints = shape(decided)
    return Base(
        graph=graph,
        decided=decided,
        thread_id=uuid.uuid4().hex,
        customer=customer,
        order=order,
        run_ids=tuple(str(uuid.uuid4()) for _ in range(runs)),
        checkpoint_ids=tuple(os.urandom(16).hex() for _ in range(checkpoints)),
        client_decision_ids=(uuid.uuid4().hex,) if decided else (),
        item_id=item_id,
    )


def tokens(base: Base) -> list[str]:
    """Every value of the thread's rows that differs between threads, in a fixed order."""
    from beamweaver_core.agent import HITL
    from beamweaver_core.graph.checkpoints import task_id
    from beamweaver_core.graph.interrupts import interrupt_id
    from bench.scale.graphs import review_request
    from reviews import payloads

    tasks = [
        task_id(checkpoint, "", node)
        for checkpoint, node in zip(base.checkpoint_ids, NODES, strict=False)
    ]
    review = review_request(base.graph, {"customer": base.customer, "order": base.order})
    payload = payloads.canonical(review.to_value())
    out = [
        base.thread_id,
        base.customer,
        base.order,
        *base.run_ids,
        *base.checkpoint_ids,
        *tasks,
        interrupt_id(f"{NODES[0]}:{tasks[0]}", 0),
        payloads.digest(payload),
    ]
    if base.decided:
        bound = HITL.bind_decisions(review, [{"type": "approve"}])
        out += [str(bound[0]["binding"]), *base.client_decision_ids]
    return out


def kind(graph: str, decided: bool) -> str:
    """The name of the template of `graph` in that state."""
    return f"{graph}:{'decided' if decided else 'pending'}"
