"""The official JS client, `@langchain/langgraph-sdk` from npm, unchanged, against a live
server: create a thread → wait to the interrupt → resume as a reviewer → stream to the end
(`js/smoke.mjs`). The package is installed from `js/package-lock.json` with `npm ci` into
a cache directory keyed by the lockfile (npm's registry is reachable in CI); the test skips
only where Node is absent."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from beamweaver_core.models import Run
from reviews.models import Decision

pytestmark = [pytest.mark.processes, pytest.mark.django_db(transaction=True)]

JS = Path(__file__).with_name("js")
FILES = ("package.json", "package-lock.json", "smoke.mjs")


def _cache_root() -> Path:
    configured = os.environ.get("BEAMWEAVER_NODE_CACHE")
    if configured:
        return Path(configured)
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "beamweaver"


@pytest.fixture(scope="module")
def smoke_dir() -> Path:
    """A directory with the locked SDK installed and the smoke script beside it."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.skip("Node.js (node and npm) is not installed on this machine")
    lock = (JS / "package-lock.json").read_bytes()
    target = _cache_root() / f"langgraph-sdk-js-{hashlib.sha256(lock).hexdigest()[:16]}"
    target.mkdir(parents=True, exist_ok=True)
    for name in FILES:
        shutil.copyfile(JS / name, target / name)
    if not (target / "node_modules" / "@langchain" / "langgraph-sdk").is_dir():
        subprocess.run(
            ["npm", "ci", "--no-audit", "--no-fund", "--cache", str(target / ".npm")],
            cwd=target,
            check=True,
            capture_output=True,
            timeout=240,
        )
    return target


def test_the_js_sdk_creates_waits_resumes_and_streams_to_the_end(
    lg_url: str, alice_token: str, bob_token: str, smoke_dir: Path
) -> None:
    env = {
        **os.environ,
        "LG_URL": lg_url,
        "LG_REQUESTER_TOKEN": alice_token,
        "LG_REVIEWER_TOKEN": bob_token,
    }
    done = subprocess.run(
        ["node", "smoke.mjs"],
        cwd=smoke_dir,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    seen: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    thread_id = seen["thread"]["id"]
    assert seen["thread"]["metadata"]["from"] == "js"

    (review,) = seen["paused"]["__interrupt__"]
    assert review["value"]["action_requests"][0]["name"] == "send_email" and review["id"]
    assert seen["pausedStatus"] == "interrupted"
    assert seen["ownStatus"] == 403  # the requester cannot approve their own run

    events = seen["events"]
    resume = Run.objects.get(thread_id=thread_id, kind="resume")
    assert events[0] == ["metadata", {"run_id": str(resume.id), "attempt": 1}]
    assert [event for event, _ in events[1:-1]] and {e for e, _ in events[1:-1]} == {
        "values",
        "updates",
    }
    final = events[-2][1]["messages"]
    assert [m["type"] for m in final] == ["human", "ai", "tool", "ai"]
    assert final[-1]["content"] == "Done: sent to a@example.com"
    assert events[-1][0] == "end"
    assert seen["doneStatus"] == "idle"
    assert seen["doneValues"]["messages"][-1]["content"] == "Done: sent to a@example.com"
    decision = Decision.objects.get(item__thread_id=thread_id)
    assert (decision.user.username, decision.source, decision.summary) == ("bob", "api", "approve")
