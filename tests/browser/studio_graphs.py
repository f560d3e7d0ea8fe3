"""The graph the thread page's browser tests stream tokens from (through
`BEAMWEAVER_GRAPHS`): an agent whose scripted reply comes in small, slow chunks."""

from __future__ import annotations

import os
import time
from pathlib import Path

from beamweaver_core.agent import Agent, Message
from beamweaver_core.llm import ScriptedChatModel

REPLY = "Tokens arrive one small piece at a time, then settle into the conversation."


def _reply(messages: list[Message]) -> Message:
    # The reply waits (a minute at most) for $BEAMWEAVER_TEST_GATE: the test opens the
    # page, sees it live, then lets the tokens come.
    gate = os.environ.get("BEAMWEAVER_TEST_GATE")
    deadline = time.monotonic() + 60
    while gate and not Path(gate).exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    return Message.assistant(REPLY)


streaming_chat = Agent.build(
    model=ScriptedChatModel([_reply] * 100, chunk_size=4, chunk_delay=0.1),
    tools=[],
    name="streaming_chat",
)
