"""`manage.py pending` and `manage.py resume`: the inbox from a terminal."""

from __future__ import annotations

import json
from io import StringIO
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.core.management.base import CommandError

from beamweaver_core.models import Run
from beamweaver_core.runtime.worker import Worker, WorkerSettings
from reviews.management.commands.resume import Command as ResumeCommand
from reviews.models import AuditEvent, Decision, ReviewItem
from tests.reviews.conftest import make_reviewer, pause, run_next

pytestmark = pytest.mark.django_db


def run(*args: Any) -> str:
    out = StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()


def test_pending_lists_items_as_text_and_json() -> None:
    email = pause()
    question = pause("approval", {"amount": 2}, thread_id="question-1")
    ReviewItem.objects.filter(pk=pause().pk).update(status="decided")

    text = run("pending")
    listed = json.loads(run("pending", "--json"))
    only = json.loads(run("pending", "--json", "--graph", "approval"))

    assert text.splitlines()[0].startswith(
        f"#{email.pk}  tool_review send_email  graph=tool_review"
    )
    assert f"thread=question-1  interrupt={question.interrupt_id}" in text.splitlines()[1]
    assert [i["id"] for i in listed] == [email.pk, question.pk]
    assert listed[0]["digest"] == email.digest and listed[0]["payload"] == email.payload
    assert [i["id"] for i in only] == [question.pk]


def test_pending_says_when_nothing_waits_and_refuses_unknown_graphs() -> None:
    assert run("pending") == "No pending review items.\n"
    with pytest.raises(CommandError, match="No graph named 'nope'; registered: "):
        run("pending", "--graph", "nope")


def test_resume_decides_like_the_inbox_as_the_system_user() -> None:
    item = pause()

    out = json.loads(
        run("resume", item.thread_id, "--decisions", '[{"type": "approve"}]', "--json")
    )

    assert (out["status"], out["code"], out["decision"]["by"]) == (
        200,
        "accepted",
        "beamweaver-system",
    )
    decision = Decision.objects.get()
    assert (decision.source, decision.user.username) == ("command", "beamweaver-system")
    assert decision.user.has_usable_password() is False
    assert AuditEvent.objects.get(action="decided").source == "command"
    assert out["run"]["status"] == "succeeded"


def test_resume_as_a_named_reviewer(alice: User) -> None:
    item = pause()

    out = run(
        "resume",
        item.thread_id,
        "--decisions",
        '{"decisions": [{"type": "reject", "message": "no"}]}',
        "--user",
        "alice",
    )

    assert out.startswith("Decision recorded (reject); the run resumes. Item #")
    assert Decision.objects.get().user == alice


def test_resume_refuses_unknown_users_and_users_without_the_permission() -> None:
    item = pause()
    make_reviewer("viewer", reviewer=False)

    for name in ("nobody", "viewer"):
        with pytest.raises(
            CommandError, match=f"No active user '{name}' with the reviewer permission"
        ):
            run("resume", item.thread_id, "--decisions", "[]", "--user", name)


def test_resume_refuses_invalid_decisions_and_the_item_stays_pending() -> None:
    item = pause()

    with pytest.raises(CommandError) as refused:
        run("resume", item.thread_id, "--decisions", '[{"type": "execute"}]')

    assert str(refused.value).startswith("HTTP 422 invalid: The decision is not valid")
    assert "Unknown decision type 'execute'" in str(refused.value)
    assert refused.value.returncode == 1
    item.refresh_from_db()
    assert item.status == "pending"
    assert AuditEvent.objects.filter(action="refused", source="command").count() == 1


def test_resume_refuses_bad_json_within_the_limits() -> None:
    item = pause()

    with pytest.raises(CommandError, match="nested more than 32 levels"):
        run("resume", item.thread_id, "--decisions", "[" * 500 + "]" * 500)
    with pytest.raises(CommandError, match="The answer is not valid JSON"):
        run("resume", item.thread_id, "--decisions", "{oops")


def test_resume_refuses_a_changed_digest_and_a_second_decision() -> None:
    item = pause()

    with pytest.raises(CommandError, match="HTTP 409 payload_changed"):
        run("resume", item.thread_id, "--decisions", '[{"type": "approve"}]', "--digest", "a" * 64)
    run("resume", item.thread_id, "--decisions", '[{"type": "approve"}]')
    with pytest.raises(CommandError, match="has no pending review item"):
        run("resume", item.thread_id, "--decisions", '[{"type": "approve"}]')


def test_resume_with_the_same_decision_id_does_nothing_twice() -> None:
    item = pause()
    args = (
        "resume",
        item.thread_id,
        "--decisions",
        '[{"type": "approve"}]',
        "--decision-id",
        "cli-1",
        "--json",
    )

    first = json.loads(run(*args))
    ReviewItem.objects.filter(pk=item.pk).update(status="pending")  # as if re-listed
    again = json.loads(run(*args))

    assert (first["replayed"], again["replayed"]) == (False, True)
    assert Decision.objects.count() == 1


def test_resume_answers_a_plain_interrupt_with_a_value() -> None:
    item = pause("approval", {"amount": 1})

    with pytest.raises(CommandError, match="not a tool review; answer it with --value"):
        run("resume", item.thread_id, "--decisions", "[]")
    run("resume", item.thread_id, "--value", '{"ok": true}')

    assert Decision.objects.get().answer == {"ok": True}


def test_resume_needs_the_interrupt_when_several_are_pending() -> None:
    item = pause("pair")
    right = ReviewItem.objects.filter(thread_id=item.thread_id).order_by("node").last()
    assert right is not None

    with pytest.raises(CommandError, match="has 2 pending interrupts; choose one with --interrupt"):
        run("resume", item.thread_id, "--value", '"x"')
    with pytest.raises(CommandError, match="has no pending interrupt 'nope'"):
        run("resume", item.thread_id, "--value", '"x"', "--interrupt", "nope")
    run("resume", item.thread_id, "--value", '"R"', "--interrupt", right.interrupt_id)

    assert Decision.objects.get().item == right


def test_resume_continues_a_breakpoint() -> None:
    item = pause("checkpointed")

    with pytest.raises(CommandError, match="A breakpoint takes no answer"):
        run("resume", item.thread_id, "--value", "1")
    run("resume", item.thread_id, "--value", "null")

    assert Run.objects.get(kind="resume").status == "succeeded"


def test_resume_needs_an_answer() -> None:
    with pytest.raises(CommandError, match="one of the arguments --value --decisions is required"):
        run("resume", "t")


# What the resumed run does: here (the default), waited for (--wait), or only queued.


def test_resume_runs_the_resumed_run_here_to_its_end_without_a_worker() -> None:
    """No worker runs: the command claims the resumed run as a worker would and runs it
    in its own process, and says how it ended."""
    item = pause()

    out = json.loads(
        run("resume", item.thread_id, "--decisions", '[{"type": "approve"}]', "--json")
    )

    resume = Run.objects.get(kind="resume")
    assert (resume.status, resume.lease_owner, resume.attempts) == ("succeeded", "", 1)
    assert out["run"] == {
        "run_id": str(resume.id),
        "thread_id": item.thread_id,
        "graph": "tool_review",
        "status": "succeeded",
        "context": None,
        "result": resume.result,
        "error": None,
    }
    assert not Run.objects.filter(status="queued").exists()


def test_resume_says_when_the_resumed_run_pauses_again() -> None:
    item = pause("pair")
    left = ReviewItem.objects.filter(thread_id=item.thread_id).order_by("node").first()
    assert left is not None

    out = run("resume", item.thread_id, "--value", '"L"', "--interrupt", left.interrupt_id)

    resume = Run.objects.get(kind="resume")
    assert resume.status == "interrupted"
    assert out.splitlines()[1] == (
        f"Resume run {resume.id}: paused again for review (see `manage.py pending`)."
    )


def test_resume_no_wait_only_queues_the_resumed_run() -> None:
    first, second = pause(), pause()
    approve = ("--decisions", '[{"type": "approve"}]', "--no-wait")

    out = json.loads(run("resume", first.thread_id, *approve, "--json"))
    text = run("resume", second.thread_id, *approve)

    assert out["run"]["status"] == "queued"
    assert text.splitlines()[1].endswith(
        "queued; a worker resumes it (`manage.py beamweaver_worker` runs workers)."
    )
    assert Run.objects.filter(kind="resume", status="queued").count() == 2
    assert run_next().status == "succeeded"


def test_resume_wait_without_a_worker_gives_up_after_the_timeout() -> None:
    item = pause()

    with pytest.raises(CommandError) as waited:
        run(
            "resume",
            item.thread_id,
            "--decisions",
            '[{"type": "approve"}]',
            "--wait",
            "--timeout",
            "0.5",
        )

    assert waited.value.returncode == 3
    assert "The decision is recorded, but resume run" in str(waited.value)
    assert "is still queued after 0.5 s" in str(waited.value)
    assert Run.objects.get(kind="resume").status == "queued"
    assert Decision.objects.count() == 1


@pytest.mark.django_db(transaction=True)
def test_resume_wait_reports_what_a_worker_made_of_the_resumed_run() -> None:
    item = pause()
    worker = Worker(
        threads=1,
        name="other-process",
        conf=WorkerSettings(
            lease_seconds=10, heartbeat_seconds=1, poll_seconds=0.2, max_attempts=3
        ),
    ).start()
    try:
        out = json.loads(
            run(
                "resume", item.thread_id, "--decisions", '[{"type": "approve"}]', "--wait", "--json"
            )
        )
    finally:
        worker.stop(5)

    assert out["run"]["status"] == "succeeded"
    assert worker.completed == 1


def test_resume_help_says_where_the_resumed_run_runs() -> None:
    text = " ".join(ResumeCommand().create_parser("manage.py", "resume").format_help().split())

    assert "runs it to its next pause or end in its own process" in text
    assert "--wait waits for a worker" in text and "--no-wait only queues it" in text
    with pytest.raises(CommandError, match="--timeout must be a positive number of seconds"):
        run("resume", "t", "--value", "1", "--timeout", "0")
