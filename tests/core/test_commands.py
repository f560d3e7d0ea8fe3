"""Management commands: run_graph, prune_checkpoints (JSON output, exit status, --help)."""

from __future__ import annotations

import io
import json
import operator
import subprocess
import sys
from datetime import timedelta
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone

from beamweaver_core.checkpoint import PostgresCheckpointer
from beamweaver_core.graph import START, Graph, interrupt
from beamweaver_core.models import Checkpoint, Run, Thread
from tests.support.processes import ROOT

pytestmark = pytest.mark.django_db(transaction=True)


def run_command(*args: Any) -> str:
    out = io.StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()


@pytest.mark.parametrize(
    "command", ["run_graph", "pending", "resume", "prune_checkpoints", "beamweaver_worker"]
)
def test_every_command_documents_itself(command: str) -> None:
    out = subprocess.run(
        [sys.executable, str(ROOT / "manage.py"), command, "--help"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "usage:" in out.stdout and len(out.stdout) > 300


def test_run_graph_prints_the_pause_as_json() -> None:
    result = json.loads(
        run_command("run_graph", "approval", "--input", '{"amount": 42}', "--thread", "cli-1")
    )
    assert result["status"] == "interrupted"
    assert result["thread_id"] == "cli-1"
    assert result["result"]["interrupts"][0]["value"] == {"question": "Approve?", "amount": 42}


def test_run_graph_takes_json_like_the_other_commands() -> None:
    result = json.loads(
        run_command("run_graph", "approval", "--input", "{}", "--thread", "cli-2", "--json")
    )
    assert (result["status"], result["thread_id"]) == ("interrupted", "cli-2")


def test_run_graph_runs_the_graph_in_the_context_given() -> None:
    result = json.loads(
        run_command("run_graph", "contextual", "--input", "{}", "--context", '{"tenant": "acme"}')
    )
    assert (result["status"], result["context"]) == ("interrupted", {"tenant": "acme"})
    assert result["result"]["interrupts"][0]["value"]["context"] == {"tenant": "acme"}
    assert Run.objects.get(id=result["run_id"]).context == {"tenant": "acme"}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["approval", "--input", "{not json"], "--input is not valid JSON"),
        (["approval", "--input", "[1, 2]"], "--input must be a JSON object"),
        (["missing", "--input", "{}"], "No graph named 'missing' is registered"),
        (["approval", "--input", "{}", "--context", "{not json"], "--context is not valid JSON"),
        (["approval", "--input", "{}", "--context", '"acme"'], "--context must be a JSON object"),
        (["approval", "--input", "{}", "--context", "[1]"], "--context must be a JSON object"),
        (
            ["approval", "--input", "{}", "--context", "[" * 5000],
            "--context is nested more than 32 levels",
        ),
        (["approval", "--input", "{}", "--context", '{"__bw__": 1}'], "reserved key '__bw__'"),
    ],
)
def test_run_graph_refuses_bad_input(args: list[str], message: str) -> None:
    with pytest.raises(CommandError, match=message):
        run_command("run_graph", *args)
    assert not Run.objects.exists()


def test_run_graph_exits_2_when_the_run_fails() -> None:
    with pytest.raises(CommandError) as info:
        run_command("run_graph", "explode", "--input", "{}")
    assert info.value.returncode == 2


def chatty_graph() -> Any:
    return (
        Graph()
        .add_reducer("messages", operator.add)
        .add_node(
            "say",
            lambda s: {
                "messages": [{"text": f"message {len(s['messages'])} " + "x" * 200}],
                "summary": {"count": len(s["messages"]) + 1, "pad": "y" * 300},
            },
        )
        .add_node("ask", lambda s: {"answer": interrupt("keep going?")})
        .add_edge(START, "say")
        .add_conditional_edges("say", lambda s: "say" if len(s["messages"]) % 10 else "ask")
        .add_edge("ask", "say")
        .compile(checkpointer=PostgresCheckpointer())
    )


def test_prune_keeps_paused_threads_resumable_and_rebuildable() -> None:
    graph = chatty_graph()
    config = {"configurable": {"thread_id": "prune-me"}}
    Thread.objects.create(id="prune-me", graph="test")
    graph.invoke({"messages": []}, config)
    graph.resume("yes", config)
    before = graph.get_state(config)
    assert len(before.values["messages"]) == 20
    checkpoints_before = Checkpoint.objects.filter(thread_id="prune-me").count()

    report = json.loads(run_command("prune_checkpoints", "--keep", "2", "--json"))

    assert report["checkpoints_deleted"] == checkpoints_before - 2
    assert report["blobs_deleted"] >= 15  # old versions of "summary"; the message chain stays
    assert Checkpoint.objects.filter(thread_id="prune-me").count() == 2
    after = graph.get_state(config)
    assert after.values == before.values
    assert after.interrupts == before.interrupts
    assert len(graph.resume("yes", config).interrupt.value) > 0
    assert len(graph.get_state(config).values["messages"]) == 30


def test_prune_dry_run_deletes_nothing() -> None:
    graph = chatty_graph()
    Thread.objects.create(id="dry", graph="test")
    graph.invoke({"messages": []}, {"configurable": {"thread_id": "dry"}})
    count = Checkpoint.objects.filter(thread_id="dry").count()
    report = json.loads(run_command("prune_checkpoints", "--keep", "1", "--dry-run", "--json"))
    assert report["checkpoints_deleted"] == count - 1
    assert Checkpoint.objects.filter(thread_id="dry").count() == count


def test_prune_drops_old_finished_threads_and_skips_busy_ones() -> None:
    graph = chatty_graph()
    for thread_id, status in (
        ("old-done", "completed"),
        ("old-paused", "interrupted"),
        ("new-done", "completed"),
    ):
        Thread.objects.create(id=thread_id, graph="test", status=status)
        graph.invoke({"messages": []}, {"configurable": {"thread_id": thread_id}})
    Thread.objects.filter(id__startswith="old-").update(
        updated_at=timezone.now() - timedelta(days=40)
    )
    Thread.objects.create(id="busy", graph="approval")
    Run.objects.create(thread_id="busy", graph="approval", status="queued")

    report = json.loads(run_command("prune_checkpoints", "--finished-older-than", "30", "--json"))

    assert [r["thread_id"] for r in report["dropped"]] == ["old-done"]
    assert not Checkpoint.objects.filter(thread_id="old-done").exists()
    assert Checkpoint.objects.filter(thread_id="old-paused").exists()
    assert Checkpoint.objects.filter(thread_id="new-done").exists()
    assert Thread.objects.filter(id="old-done").exists()
    assert [s["thread_id"] for s in report["skipped"]] == ["busy"]


def test_prune_touches_only_the_threads_with_something_to_prune(
    django_assert_max_num_queries: Any,
) -> None:
    """A retention run over many threads with nothing to prune reads them a slice at a
    time and locks none of them: its statements do not grow with the number of threads
    (it used to lock and re-read every thread, one transaction each)."""
    one_step = (
        Graph()
        .add_node("step", lambda s: {"n": 1})
        .add_edge(START, "step")
        .compile(checkpointer=PostgresCheckpointer())
    )
    for i in range(40):
        one_step.invoke({"n": 0}, {"configurable": {"thread_id": f"short-{i:02d}"}})
    graph = chatty_graph()
    graph.invoke({"messages": []}, {"configurable": {"thread_id": "long"}})

    with django_assert_max_num_queries(20):
        report = json.loads(run_command("prune_checkpoints", "--keep", "2", "--json"))

    assert [r["thread_id"] for r in report["pruned"]] == ["long"]
    assert Checkpoint.objects.filter(thread_id="long").count() == 2
    assert Checkpoint.objects.filter(thread_id="short-07").count() == 2


@pytest.mark.parametrize(
    ("args", "message"),
    [(["--keep", "0"], "--keep must be at least 1"), (["--thread", "ghost"], "does not exist")],
)
def test_prune_refuses_bad_input(args: list[str], message: str) -> None:
    with pytest.raises(CommandError, match=message):
        run_command("prune_checkpoints", *args)
