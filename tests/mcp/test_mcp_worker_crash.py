"""A worker killed after sending an MCP call, before recording its result, is replaced,
and the call is not sent again: MCP tools are at most once, so the retried run asks a
human whether the call took effect. The server (streamable HTTP, outliving the workers)
counts what it received; the call carried the ledger's idempotency key."""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Iterator
from typing import Any

import pytest

from beamweaver_core.agent.ledger import OUTCOME_UNKNOWN
from beamweaver_core.checkpoint import PostgresCheckpointer
from beamweaver_core.models import Run, ToolExecution
from beamweaver_core.runtime import registry, service
from tests.mcp.conftest import CallLog
from tests.mcp.graphs import MCP_GRAPHS
from tests.runtime.test_worker_processes import FAST
from tests.support.graphs import TEST_GRAPHS
from tests.support.processes import child_env, start_worker
from tests.support.waiting import wait_for

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.processes]


@pytest.fixture
def workers() -> Iterator[list[subprocess.Popen[str]]]:
    started: list[subprocess.Popen[str]] = []
    yield started
    for proc in started:
        if proc.poll() is None:
            proc.kill()
        proc.wait(10)


def test_a_worker_killed_after_an_mcp_call_does_not_send_it_again(
    settings: Any, call_log: CallLog, http_server: Any, workers: list[subprocess.Popen[str]]
) -> None:
    # The server records the call, then waits 6 s before answering: the kill lands there.
    _, url = http_server(MCP_TEST_PAUSE="6")
    servers = {"bank": {"url": url, "prefix": "bank_", "timeout": 60, "connect_timeout": 120}}
    graphs = {**TEST_GRAPHS, **MCP_GRAPHS}
    settings.BEAMWEAVER = {**settings.BEAMWEAVER, "GRAPHS": graphs, "MCP_SERVERS": servers}
    env = child_env(
        BEAMWEAVER_GRAPHS=json.dumps(graphs), BEAMWEAVER_MCP_SERVERS=json.dumps(servers), **FAST
    )
    workers.append(start_worker(env))
    run = service.start_run("mcp_transfer", {"messages": [{"role": "user", "content": "pay"}]})

    wait_for(lambda: call_log.calls("transfer"), 180, "the transfer to reach the server")
    workers[0].kill()
    workers[0].wait(10)
    workers.append(start_worker(env))
    wait_for(
        lambda: Run.objects.filter(thread_id=run.thread_id, status="interrupted").exists(),
        180,
        "the retried run to pause",
    )
    time.sleep(2)  # a second call would have reached the server by now

    (sent,) = call_log.calls("transfer")
    assert sent["args"] == {"amount": 250.0, "to_account": "DE-7"}
    row = ToolExecution.objects.get(thread_id=run.thread_id)
    assert (row.key, row.tool, row.status, row.attempts) == (
        sent["key"],
        "bank_transfer",
        "started",
        2,
    )
    graph = registry.compiled_graph("mcp_transfer", PostgresCheckpointer())
    (pending,) = graph.get_state({"configurable": {"thread_id": run.thread_id}}).interrupts
    assert pending.value["kind"] == OUTCOME_UNKNOWN
    assert (pending.value["tool"], pending.value["idempotency_key"]) == (
        "bank_transfer",
        sent["key"],
    )
