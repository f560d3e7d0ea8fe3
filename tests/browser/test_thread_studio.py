"""The thread page as a studio, in Chromium at desktop and phone width: the running node
highlighted live while a run goes, a model's reply appearing token by token then settling
into the conversation, and a fork from a past checkpoint with an edited value producing
a completed branch in the timeline. No console error, nothing wider than the screen."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import Permission, User

from beamweaver_core.checkpoint import PostgresCheckpointer
from beamweaver_core.models import Run
from beamweaver_core.runtime import registry, service
from tests.browser.studio_graphs import REPLY
from tests.browser.test_inbox_live import WAIT
from tests.reviews.conftest import make_reviewer
from tests.reviews.graphs import REVIEW_GRAPHS

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

GATE = Path(tempfile.gettempdir()) / f"bw-studio-gate-{os.getpid()}"
HOLD = Path(tempfile.gettempdir()) / f"bw-studio-hold-{os.getpid()}"
STUDIO_GRAPHS = {**REVIEW_GRAPHS, "streaming_chat": "tests.browser.studio_graphs:streaming_chat"}
SERVER_ENV = {
    "BEAMWEAVER_GRAPHS": json.dumps(STUDIO_GRAPHS),
    # The `steps` graph: each step takes 0.4 s, and steps from s2 on wait for the gate.
    "BEAMWEAVER_TEST_GATE": str(GATE),
    # ... and s4 waits for the hold: seen running however slowly the pushes come.
    "BEAMWEAVER_TEST_HOLD": str(HOLD),
    "BEAMWEAVER_TEST_STEP_SECONDS": "0.4",
}
WIDTHS = {"desktop": (1280, 900), "phone": (390, 844)}
SHOTS = os.environ.get("BEAMWEAVER_SHOTS", "")  # a folder: save screenshots there


@pytest.fixture(autouse=True)
def _studio_graphs(settings: Any) -> None:
    settings.BEAMWEAVER = {
        **settings.BEAMWEAVER,
        "GRAPHS": {**settings.BEAMWEAVER["GRAPHS"], **STUDIO_GRAPHS},
    }


def _sized(session: Any, size: str) -> int:
    width, height = WIDTHS[size]
    session.page.set_viewport_size({"width": width, "height": height})
    return width


def _fits(session: Any, width: int) -> None:
    scroll = session.page.evaluate("document.documentElement.scrollWidth")
    assert scroll <= width, f"the thread page is {scroll}px wide at {width}px"


def _running(page: Any, node: str) -> str:
    return f'#graph-root g.node.is-running[data-node="{node}"]'


@pytest.mark.parametrize("size", list(WIDTHS))
def test_the_running_node_is_highlighted_live_and_the_path_is_traced(
    sessions: Any, size: str
) -> None:
    GATE.unlink(missing_ok=True)
    HOLD.unlink(missing_ok=True)
    alice = sessions(make_reviewer("alice"))
    width = _sized(alice, size)
    run = service.start_run("steps", {"log": []}, thread_id=f"live-{size}")

    page = alice.open(f"/threads/live-{size}/")
    alice.wait_live()
    # s2 waits for the gate: it is the one running, on the page however it was opened.
    page.wait_for_selector(_running(page, "s2"), state="attached", timeout=WAIT)
    assert page.locator("#graph-root g.node.is-running").count() == 1
    _fits(alice, width)
    GATE.touch()
    # The page stays open: s4 running can only come from the pushed run events.
    page.wait_for_selector(_running(page, "s4"), state="attached", timeout=WAIT)
    assert page.locator(_running(page, "s2")).count() == 0
    HOLD.touch()
    page.wait_for_selector('#thread-status [data-status="completed"]', timeout=WAIT)
    page.wait_for_function(
        "document.querySelectorAll('#graph-root g.node.is-running').length === 0", timeout=WAIT
    )
    visited = page.eval_on_selector_all(
        "#graph-root g.node.on-path", "els => els.map(e => e.dataset.node)"
    )
    assert visited == ["s0", "s1", "s2", "s3", "s4", "s5"]
    taken = page.locator('#graph-root path.edge.on-path[data-target="__end__"]').count()
    assert taken == 1
    assert Run.objects.get(id=run.id).status == "succeeded"


@pytest.mark.parametrize("size", list(WIDTHS))
def test_a_models_reply_appears_token_by_token_then_settles(sessions: Any, size: str) -> None:
    GATE.unlink(missing_ok=True)
    alice = sessions(make_reviewer("alice"))
    width = _sized(alice, size)
    service.start_run(
        "streaming_chat",
        {"messages": [{"role": "user", "content": "Say something"}]},
        thread_id=f"tokens-{size}",
    )

    page = alice.open(f"/threads/tokens-{size}/")
    alice.wait_live()
    page.wait_for_selector('#thread-status [data-status="running"]', timeout=WAIT)
    GATE.touch()
    seen = []
    page.wait_for_selector("#thread-stream .stream-message", timeout=WAIT)
    for _ in range(40):
        text = page.evaluate(
            "(document.querySelector('#thread-stream .stream-message') || {}).textContent || ''"
        )
        if text and (not seen or text != seen[-1]):
            seen.append(text)
        if text == REPLY or not text:
            break
        page.wait_for_timeout(100)
    partial = [t for t in seen if t and t != REPLY]
    assert len(partial) >= 3, seen  # the reply grew in pieces, in order
    assert all(REPLY.startswith(t) for t in partial)
    _fits(alice, width)
    page.wait_for_selector('#thread-status [data-status="completed"]', timeout=WAIT)
    page.wait_for_selector(".chat-line.role-assistant", timeout=WAIT)
    assert page.inner_text(".chat-line.role-assistant .chat-content") == REPLY
    assert page.locator("#thread-stream").is_hidden()


@pytest.mark.parametrize("size", list(WIDTHS))
def test_a_fork_from_a_past_checkpoint_with_an_edited_value_completes_as_a_branch(
    sessions: Any, size: str
) -> None:
    GATE.touch()
    HOLD.touch()
    carol = make_reviewer("carol")
    # She forks a thread someone else started: an operator who may cancel any run.
    carol.user_permissions.add(Permission.objects.get(codename="cancel_run"))
    operator = sessions(User.objects.get(pk=carol.pk))
    width = _sized(operator, size)
    thread_id = f"fork-{size}"
    service.start_run("steps", {"log": []}, thread_id=thread_id)
    page = operator.open(f"/threads/{thread_id}/")
    operator.wait_live()
    page.wait_for_selector('#thread-status [data-status="completed"]', timeout=WAIT)
    graph = registry.compiled_graph("steps", PostgresCheckpointer())
    history = list(graph.get_state_history({"configurable": {"thread_id": thread_id}}))
    past = next(s for s in history if s.values.get("log") == [0, 1])
    at = past.config["configurable"]["checkpoint_id"]

    page.reload()
    # The websocket's first resync swaps the timeline in again: a click before it can land
    # on a link that is replaced under it (the fork page then never opened, in CI).
    operator.wait_live()
    page.click(f'#checkpoint-{at} a:has-text("Fork with edits")')
    page.wait_for_selector("form.fork-form", timeout=WAIT)
    _fits(operator, width)
    page.fill('textarea[name="value_0"]', "[42]")
    page.select_option('select[name="as_node"]', "s1")
    page.click('form.fork-form button[type="submit"]')

    page.wait_for_url(f"**/threads/{thread_id}/", timeout=WAIT)
    operator.wait_live()
    page.wait_for_selector('#thread-status [data-status="completed"]', timeout=WAIT)
    page.wait_for_selector(".timeline-step.on-branch", timeout=WAIT)
    latest = graph.get_state({"configurable": {"thread_id": thread_id}})
    assert latest.values["log"] == [0, 1, 42, 2, 3, 4, 5]
    timeline = page.inner_text("#thread-history")
    assert "carol edited the state (fork as s1)" in timeline
    assert "branch 1" in timeline and "forked from" in timeline
    assert page.locator(f"#checkpoint-{at}").count() == 1  # the main line is still there
    assert Run.objects.filter(thread_id=thread_id, status="succeeded").count() == 2
    _fits(operator, width)
    if SHOTS:
        page.screenshot(path=str(Path(SHOTS) / f"thread-studio-{size}.png"), full_page=True)
