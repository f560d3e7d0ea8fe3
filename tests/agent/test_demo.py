"""The demo operations assistant, offline on its rules-based scripted model."""

from __future__ import annotations

import importlib
from typing import Any

import pytest

from beamweaver_core.agent import HITL, Agent, Message, ToolCall
from beamweaver_core.agent.tools import ToolRuntime
from beamweaver_core.checkpoint import MemoryCheckpointer
from beamweaver_core.demo import store as store_module
from beamweaver_core.demo.agent import OpsAssistant
from beamweaver_core.demo.model import DemoChatModel, demo_model_spec
from beamweaver_core.demo.planner import HELP_TEXT, parse_request
from beamweaver_core.demo.store import OpsStore
from beamweaver_core.demo.tools import issue_refund, send_email
from beamweaver_core.graph import Completed, Interrupted
from beamweaver_core.llm import AnthropicChatModel, OpenAIChatModel, ScriptedChatModel


@pytest.fixture(autouse=True)
def offline(monkeypatch: pytest.MonkeyPatch) -> OpsStore:
    """No provider keys, and a fresh back office for every test."""
    for key in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "BEAMWEAVER_DEMO_MODEL"):
        monkeypatch.delenv(key, raising=False)
    fresh = OpsStore.with_fixtures()
    monkeypatch.setattr(store_module, "STORE", fresh)
    return fresh


def ask(text: str, checkpointer: MemoryCheckpointer, config: dict[str, Any], **kwargs: Any) -> Any:
    return OpsAssistant.invoke(
        {"messages": [{"role": "user", "content": text}]},
        checkpointer=checkpointer,
        config=config,
        **kwargs,
    )


def test_registered_in_settings_as_a_module_style_agent() -> None:
    from beamweaver_core import settings

    target = settings.BEAMWEAVER["GRAPHS"]["ops_assistant"]
    module, _, attribute = target.partition(":")
    assert getattr(importlib.import_module(module), attribute) is OpsAssistant
    assert issubclass(OpsAssistant, Agent)
    assert OpsAssistant.graph_for().name == "OpsAssistant"


def test_large_refund_waits_for_review_and_runs_once(
    offline: OpsStore, checkpointer: MemoryCheckpointer, config: dict[str, Any]
) -> None:
    paused = ask("Refund order 1234 $250", checkpointer, config)

    assert isinstance(paused, Interrupted)
    review = HITL.from_interrupt(paused.interrupt)
    assert review.to_value()["action_requests"] == [
        {
            "name": "issue_refund",
            "args": {"order_id": "1234", "amount": 250.0, "reason": "Customer request"},
            "description": "Refund $250.00 on order 1234 (Dana Whitfield, order total $480.00, $0.00 already "
            "refunded).\nReason: Customer request",
        }
    ]
    assert review.review_configs[0].allowed_decisions == ("approve", "edit", "reject")
    assert offline.orders["1234"].refunded == 0

    done = OpsAssistant.resume_review(
        [{"type": "approve"}], checkpointer=checkpointer, config=config
    )

    assert isinstance(done, Completed)
    assert offline.orders["1234"].refunded == 250.0
    assert done.state["messages"][-1] == Message.assistant(
        "Here is what happened:\n- Refunded $250.00 on order 1234 (Dana Whitfield)."
    )


def test_small_refund_and_lookup_run_without_review(
    offline: OpsStore, checkpointer: MemoryCheckpointer, config: dict[str, Any]
) -> None:
    done = ask("Refund order 2001 $20 and look up order 1236", checkpointer, config)

    assert isinstance(done, Completed)
    assert offline.orders["2001"].refunded == 20.0
    assert done.state["messages"][-1].content == (
        "Here is what happened:\n"
        "- Refunded $20.00 on order 2001 (Lena Vogel).\n"
        "- Order 1236 for Priya Raman: $1299.00, shipped, $0.00 refunded."
    )


def test_deletion_searches_first_then_a_rejection_deletes_nothing(
    offline: OpsStore, checkpointer: MemoryCheckpointer, config: dict[str, Any]
) -> None:
    paused = ask(
        "Delete closed records older than 30 days",
        checkpointer,
        config,
        context={"user_id": "alice"},
    )

    assert isinstance(paused, Interrupted)
    messages = paused.state["messages"]
    assert [c.name for c in messages[1].tool_calls] == ["search_records"]
    assert paused.interrupt.value["action_requests"][0]["description"] == (
        "Permanently delete 4 support record(s) older than 30 days with status 'closed': "
        "R-101, R-102, R-104, R-107.\nRequested by: alice"
    )

    done = OpsAssistant.resume_review(
        [{"type": "reject", "message": "Keep them for the audit."}],
        checkpointer=checkpointer,
        config=config,
        context={"user_id": "alice"},
    )

    assert isinstance(done, Completed)
    assert len(offline.records) == 8
    assert done.state["messages"][-1].content == (
        "Here is what happened:\n"
        "- Found 4 record(s): R-101, R-102, R-104, R-107.\n"
        "- delete_records: the reviewer rejected it, so I did not run it."
    )


def test_edited_email_is_the_one_sent(
    offline: OpsStore, checkpointer: MemoryCheckpointer, config: dict[str, Any]
) -> None:
    paused = ask("Email the admin about the refund backlog.", checkpointer, config)
    assert isinstance(paused, Interrupted)
    action = paused.interrupt.value["action_requests"][0]
    assert action["description"] == "Approve or edit this email before sending."
    edited = {**action["args"], "subject": "Refund backlog: 3 pending"}

    done = OpsAssistant.resume_review(
        [HITL.decision("edit", edited_action={"name": "send_email", "args": edited})],
        checkpointer=checkpointer,
        config=config,
    )

    assert isinstance(done, Completed)
    assert offline.outbox == [
        {
            "to": "admin@example.com",
            "subject": "Refund backlog: 3 pending",
            "body": action["args"]["body"],
        }
    ]
    assert done.state["messages"][-1].content == (
        'Here is what happened:\n- Emailed admin@example.com: "Refund backlog: 3 pending".'
    )


def test_side_effects_are_idempotent(offline: OpsStore) -> None:
    """Running the same tool call again (a re-run step) refunds and emails only once."""
    refund = ToolCall("r1", "issue_refund", {"order_id": "1234", "amount": 100.0})
    runtime = ToolRuntime(tool_call_id="r1", idempotency_key="key-1")

    first = issue_refund.execute(refund, runtime)
    again = issue_refund.execute(refund, runtime)
    other = issue_refund.execute(refund, ToolRuntime(tool_call_id="r1", idempotency_key="key-2"))

    assert first == again
    assert offline.orders["1234"].refunded == 200.0
    assert other.status == "success"

    mail = ToolCall("e1", "send_email", {"to": "a@example.com", "subject": "s", "body": "b"})
    mail_runtime = ToolRuntime(tool_call_id="e1", idempotency_key="key-3")
    send_email.execute(mail, mail_runtime)
    send_email.execute(mail, mail_runtime)
    assert len(offline.outbox) == 1


def test_refund_beyond_the_order_total_is_an_error_the_model_reads(
    checkpointer: MemoryCheckpointer, config: dict[str, Any]
) -> None:
    paused = ask("Refund order 1235 $500", checkpointer, config)
    assert isinstance(paused, Interrupted)

    done = OpsAssistant.resume_review(
        [{"type": "approve"}], checkpointer=checkpointer, config=config
    )

    assert isinstance(done, Completed)
    assert done.state["messages"][-1].content == (
        "Here is what happened:\n- issue_refund failed: tool `issue_refund` raised ValueError: "
        "A refund of $500.00 is not possible: $89.90 of order 1235 is refundable."
    )


def test_unknown_requests_get_help(
    checkpointer: MemoryCheckpointer, config: dict[str, Any]
) -> None:
    done = ask("What's the weather?", checkpointer, config)
    assert isinstance(done, Completed)
    assert done.state["messages"][-1] == Message.assistant(HELP_TEXT)


def test_request_parsing() -> None:
    intents = parse_request(
        "Refund order 1234 $250, email ops about the outage and delete records older than 90 days"
    )
    assert [(i.tool, i.args) for i in intents] == [
        ("issue_refund", {"order_id": "1234", "amount": 250.0, "reason": "Customer request"}),
        ("send_email", {
            "to": "ops-team@example.com",
            "subject": "The outage",
            "body": "Hello,\n\nA note from the operations assistant about the outage.\n\nThanks.",
        }),
        ("delete_records", {"older_than_days": 90}),
    ]  # fmt: skip


def test_model_choice_follows_the_environment() -> None:
    assert demo_model_spec({}) == "scripted"
    assert demo_model_spec({"ANTHROPIC_API_KEY": "k"}) == "anthropic:claude-haiku-4-5"
    assert (
        demo_model_spec({"OPENAI_API_KEY": "k", "ANTHROPIC_API_KEY": "k"}) == "openai:gpt-4o-mini"
    )
    assert (
        demo_model_spec({"OPENAI_API_KEY": "k", "BEAMWEAVER_DEMO_MODEL": "openai:llama3.1:8b"})
        == "openai:llama3.1:8b"
    )


def test_demo_model_backends(monkeypatch: pytest.MonkeyPatch) -> None:
    model = DemoChatModel()
    assert isinstance(model.backend(), ScriptedChatModel)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    assert isinstance(model.backend(), OpenAIChatModel)
    assert model.backend() is model.backend()
    monkeypatch.delenv("OPENAI_API_KEY")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test")
    assert isinstance(model.backend(), AnthropicChatModel)
