"""MCP servers declared in settings, used by registered agents on the durable runtime:
one session per server per process, reused across runs and started by workers; the
review inbox builds the edit form of an MCP tool from its `inputSchema` and refuses an
edit that breaks it; a bad declaration is a system check error."""

from __future__ import annotations

import html as html_module
import importlib.util
import re
import sys
import time
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core import checks

from beamweaver_core.agent import Agent
from beamweaver_core.agent.tools import idempotency_key
from beamweaver_core.llm import ScriptedChatModel
from beamweaver_core.messages import ToolCall
from beamweaver_core.runtime import mcp_servers, service
from beamweaver_core.runtime.worker import Worker, WorkerSettings
from reviews.models import ReviewItem
from tests.mcp.conftest import CONNECT_TIMEOUT, SERVER, CallLog
from tests.mcp.graphs import MCP_GRAPHS
from tests.reviews.conftest import client_for, make_reviewer, run_next
from tests.reviews.test_views import post_decision

pytestmark = pytest.mark.django_db(transaction=True)

EMAIL = {"to": "ops@example.com", "subject": "Outage", "body": "The export failed."}


@pytest.fixture
def declared(settings: Any, call_log: CallLog) -> None:
    """The `mail` stdio test server declared in settings, and the MCP test graphs."""
    settings.BEAMWEAVER = {
        **settings.BEAMWEAVER,
        "GRAPHS": {**settings.BEAMWEAVER["GRAPHS"], **MCP_GRAPHS},
        "MCP_SERVERS": {
            "mail": {
                "command": sys.executable,
                "args": [str(SERVER)],
                "env": {"MCP_TEST_CALLS": str(call_log.path)},
                "prefix": "mail_",
                "connect_timeout": CONNECT_TIMEOUT,
            }
        },
    }


@pytest.fixture
def alice(db: Any) -> User:
    return make_reviewer("alice")


def pause_mail() -> ReviewItem:
    run = service.start_run("mcp_mail", {"messages": [{"role": "user", "content": "email ops"}]})
    done = run_next()
    assert done.status == "interrupted", done.error
    item = ReviewItem.objects.get(thread_id=run.thread_id)
    return item


def test_the_inbox_edit_form_of_an_mcp_tool_comes_from_its_input_schema(
    declared: None, call_log: CallLog, alice: User
) -> None:
    item = pause_mail()
    client = client_for(alice)

    html = client.get(f"/items/{item.pk}/").content.decode()

    assert "mail_send_email" in html
    labels = re.findall(r'<label for="d0-arg(\d)"><code>(\w+)</code>', html)
    assert [name for _, name in labels] == ["body", "priority", "subject", "to"]
    select = re.search(r'<select[^>]*id="d0-arg1".*?</select>', html, re.DOTALL)
    assert select is not None
    assert re.findall(r'<option value="(\w+)"', select.group(0)) == ["low", "normal", "high"]
    assert "Recipient address" in html  # the description from the server's schema

    fields = {"d0-type": "edit", "d0-arg0": EMAIL["body"], "d0-arg2": EMAIL["subject"]}
    refused = post_decision(client, item, {**fields, "d0-arg1": "urgent", "d0-arg3": "x" * 201})
    assert refused.status_code == 422
    page = html_module.unescape(refused.content.decode())
    assert "'urgent' is not one of" in page and "is too long" in page
    assert call_log.calls() == []

    accepted = post_decision(
        client, item, {**fields, "d0-arg1": "high", "d0-arg3": "admin@example.com"}
    )
    assert accepted.status_code == 302
    assert run_next().status == "succeeded"
    (sent,) = call_log.calls("send_email")
    assert sent["args"] == {**EMAIL, "to": "admin@example.com", "priority": "high"}
    call = ToolCall("call_mail_1", "mail_send_email", sent["args"])
    assert sent["key"] == idempotency_key(item.thread_id, "", call)


def test_one_session_per_server_per_process_is_reused_across_runs(
    declared: None, call_log: CallLog, alice: User
) -> None:
    first, second = pause_mail(), pause_mail()
    for item in (first, second):
        client = client_for(alice)
        assert post_decision(client, item, {"d0-type": "approve"}).status_code == 302
        assert run_next().status == "succeeded"

    sent = call_log.calls("send_email")
    assert len(sent) == 2
    assert sent[0]["pid"] == sent[1]["pid"]  # the same stdio server process
    assert mcp_servers.toolset("mail") is mcp_servers.toolset("mail")


def test_a_worker_starts_the_declared_servers_when_it_starts(declared: None) -> None:
    toolset = mcp_servers.toolset("mail")
    toolset.close()
    assert not toolset.session.connected
    worker = Worker(threads=1, conf=WorkerSettings(30, 5, 0.2, 5)).start()
    try:
        deadline = time.monotonic() + CONNECT_TIMEOUT
        while not toolset.session.connected:
            assert time.monotonic() < deadline, "the worker did not start the MCP server"
            time.sleep(0.1)
    finally:
        worker.stop(5)


def test_an_agent_naming_an_undeclared_server_cannot_be_built(declared: None) -> None:
    with pytest.raises(mcp_servers.UnknownMCPServerError) as refused:
        Agent.build(model=ScriptedChatModel([]), tools=[mcp_servers.mcp_server("files")])

    assert str(refused.value).startswith(
        "No MCP server named 'files' is declared; declared: ['mail']. Add it to "
        "settings.BEAMWEAVER['MCP_SERVERS']"
    )


def test_a_bad_mcp_declaration_is_a_system_check_error(settings: Any) -> None:
    settings.BEAMWEAVER = {
        **settings.BEAMWEAVER,
        "MCP_SERVERS": {
            "both": {"command": "x", "url": "http://127.0.0.1:1/mcp"},
            "typo": {"url": "ftp://files", "timout": 3},
            "shapes": {"command": "", "args": "-m server", "timeout": 0, "prefix": "a.b"},
        },
    }

    found = [e for e in checks.run_checks() if e.id == "beamweaver.E030"]

    assert [e.msg for e in found] == [
        "BEAMWEAVER['MCP_SERVERS']['both'] must have either 'command' (a stdio server) or 'url' "
        "(a streamable HTTP server), got the keys ['command', 'url'].",
        "BEAMWEAVER['MCP_SERVERS']['typo'] has unknown option(s) ['timout']; known: "
        "['at_most_once', 'connect_timeout', 'headers', 'include', 'prefix', 'timeout', 'url'].",
        "BEAMWEAVER['MCP_SERVERS']['typo']['url'] must be an http(s):// URL, got 'ftp://files'.",
        "BEAMWEAVER['MCP_SERVERS']['shapes']['command'] must be a non-empty string, got ''.",
        "BEAMWEAVER['MCP_SERVERS']['shapes']['args'] must be a list of strings, got '-m server'.",
        "BEAMWEAVER['MCP_SERVERS']['shapes']['prefix'] must be letters, digits, '_' and '-' "
        "only, got 'a.b'.",
        "BEAMWEAVER['MCP_SERVERS']['shapes']['timeout'] must be a positive number of seconds, "
        "got 0.",
    ]


def test_declaring_mcp_servers_without_the_mcp_sdk_is_a_system_check_error(
    settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The `mcp` extra is optional: a project that declares servers without it is told at
    `manage.py check`, not at the first run that needs a server."""
    find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "mcp" else find_spec(name, *a)
    )
    settings.BEAMWEAVER = {
        **settings.BEAMWEAVER,
        "MCP_SERVERS": {"mail": {"url": "http://127.0.0.1:1/mcp"}},
    }

    found = [e for e in checks.run_checks() if e.id.startswith("beamweaver.E03")]

    assert [(e.id, e.hint) for e in found] == [("beamweaver.E031", "pip install 'beamweaver[mcp]'")]

    settings.BEAMWEAVER = {**settings.BEAMWEAVER, "MCP_SERVERS": {}}
    assert not [e for e in checks.run_checks() if e.id == "beamweaver.E031"]
