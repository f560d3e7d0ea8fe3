"""The tool-execution ledger in Postgres, fenced to the run that executes the tools.

Beginning a call and recording its result are each one conditional statement: they
write only while the run still holds its fencing token, so a worker that lost its lease
can neither start a tool nor overwrite the result the new owner recorded.
"""

from __future__ import annotations

import json
import threading
from typing import Any
from uuid import UUID

from django.db import connections

from beamweaver_core.agent.ledger import LedgerEntry
from beamweaver_core.exceptions import StaleWriterError
from beamweaver_core.messages import Message
from beamweaver_core.runtime.queue import Claim

_BEGIN = """
WITH ours AS (
    SELECT 1 FROM bw_run WHERE id = %(run)s AND fencing_token = %(token)s AND status = 'running' FOR SHARE
), inserted AS (
    INSERT INTO bw_tool_execution (key, thread_id, run_id, tool, args, status, attempts, started_at)
    SELECT %(key)s, %(thread)s, %(run)s, %(tool)s, %(args)s::jsonb, 'started', 1, now()
      FROM ours
    ON CONFLICT (key) DO UPDATE SET attempts = bw_tool_execution.attempts + 1
    RETURNING (xmax = 0) AS fresh, status, message
)
SELECT (SELECT count(*) FROM ours), fresh, status, message FROM inserted
"""

_FINISH = """
WITH ours AS (
    SELECT 1 FROM bw_run WHERE id = %(run)s AND fencing_token = %(token)s AND status = 'running' FOR SHARE
)
UPDATE bw_tool_execution SET status = 'done', message = %(message)s, finished_at = now()
 WHERE key = %(key)s AND EXISTS (SELECT 1 FROM ours)
"""


class PostgresToolLedger:
    """`ToolLedger` for one claimed run."""

    def __init__(self, claim: Claim, using: str = "default") -> None:
        self.claim = claim
        self.using = using
        self._home = threading.get_ident()

    def _release(self) -> None:
        """On a thread other than the run's (parallel tool calls), give the connection
        back to the pool after each statement: the tool may run for minutes meanwhile,
        and a worker's pool holds only a few connections beyond its run threads."""
        conn = connections[self.using]
        if threading.get_ident() != self._home and not conn.in_atomic_block:
            conn.close()

    def begin(
        self, key: str, *, tool: str, thread_id: str | None, args: dict[str, Any]
    ) -> LedgerEntry:
        params: dict[str, str | int | UUID] = {
            "run": self.claim.run_id,
            "token": self.claim.token,
            "key": key,
            "thread": thread_id or self.claim.thread_id,
            "tool": tool,
            "args": json.dumps(args, ensure_ascii=False, default=repr),
        }
        with connections[self.using].cursor() as cursor:
            cursor.execute(_BEGIN, params)
            row = cursor.fetchone()
        self._release()
        if row is None:
            raise StaleWriterError(
                f"Run {self.claim.run_id} no longer owns thread {self.claim.thread_id!r}; "
                f"the tool {tool!r} was not started."
            )
        _, fresh, status, message = row
        if fresh:
            return LedgerEntry("new")
        if status == "done" and message is not None:
            return LedgerEntry("done", Message.from_dict(json.loads(message)))
        return LedgerEntry("started")

    def finish(self, key: str, message: Message) -> None:
        """Record the call's result, only while the run still holds its fencing token:
        a zombie that wakes after its tool ran cannot overwrite what the new owner
        recorded (it abandons with `StaleWriterError`)."""
        params: dict[str, str | int | UUID] = {
            "run": self.claim.run_id,
            "token": self.claim.token,
            "key": key,
            "message": json.dumps(message.to_dict(), ensure_ascii=False),
        }
        with connections[self.using].cursor() as cursor:
            cursor.execute(_FINISH, params)
            recorded = cursor.rowcount == 1
        self._release()
        if not recorded:
            raise StaleWriterError(
                f"Run {self.claim.run_id} no longer owns thread {self.claim.thread_id!r}; "
                f"the result of tool call {key[:12]} was not recorded."
            )


__all__ = ["PostgresToolLedger"]
