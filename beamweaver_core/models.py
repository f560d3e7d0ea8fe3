"""Durable storage: threads, their checkpoints (written by `PostgresCheckpointer`), and runs.

The checkpoint tables are written with raw SQL on the hot path (see
`beamweaver_core.checkpoint.postgres`); these models own the schema, the constraints that
make the storage safe (one checkpoint per position, one active run per thread), and give
the admin and the runtime an ORM view of the same rows.

Checkpoint payloads (`document`, `metadata`, `task_writes`, `blob`, `record`) are the JSON
text the encoder produced, kept byte for byte in text columns, not jsonb: jsonb rewrites numbers
(the float `1e16` comes back as the integer `10000000000000000`, `-0.0` as `0.0`), so a
state value could change type across a pause and then be refused when it is stored again.
Text also skips a parse on every write. Query them in SQL with a cast (`document::jsonb`).
"""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models
from django.db.models.functions import Now
from django.utils import timezone

from beamweaver_core import invisible
from beamweaver_core.fields import ExactJSONField


class Thread(models.Model):
    """A conversation or job whose state is kept between runs (the `thread_id`)."""

    class Status(models.TextChoices):
        IDLE = "idle"
        RUNNING = "running"
        INTERRUPTED = "interrupted"
        COMPLETED = "completed"
        FAILED = "failed"
        CANCELLED = "cancelled"

    id = models.CharField(primary_key=True, max_length=255)
    # Database defaults too: the checkpointer creates missing threads with a bare
    # `INSERT ... (id) ON CONFLICT DO NOTHING`, so the database must fill the rest.
    graph = models.CharField(max_length=200, blank=True, default="", db_default="", db_index=True)
    status = models.CharField(
        max_length=16, choices=Status, default=Status.IDLE, db_default=Status.IDLE
    )
    metadata = models.JSONField(default=dict, db_default={}, blank=True)
    created_at = models.DateTimeField(default=timezone.now, db_default=Now(), editable=False)
    updated_at = models.DateTimeField(auto_now=True, db_default=Now())

    class Meta:
        db_table = "bw_thread"
        ordering = ["-updated_at"]

    def __str__(self) -> str:
        # Marked: ids from before the thread id rule may hold bidi or invisible characters.
        return invisible.marked(self.id)


class Checkpoint(models.Model):
    """The state of one thread namespace after a super-step (see `checkpoint.encoding`).

    `seq` numbers the checkpoints of a namespace; it is unique, so two writers that start
    from the same head both try to take `head.seq + 1` and only one can commit: the main
    line cannot fork. The same unique index, scanned backwards, finds the latest checkpoint.
    """

    class Source(models.TextChoices):
        INPUT = "input"
        LOOP = "loop"
        UPDATE = "update"
        FORK = "fork"

    # db_index=False: the unique indexes below start with the thread, and every extra
    # index is paid on each super-step's insert.
    # No database-level foreign key: the write that adds a checkpoint creates its thread row
    # in the same statement, and a constraint trigger on every super-step's insert would
    # cost a third of the write. Deleting a Thread still cascades (through the ORM).
    thread = models.ForeignKey(
        Thread,
        on_delete=models.CASCADE,
        related_name="checkpoints",
        db_index=False,
        db_constraint=False,
    )
    ns = models.TextField(blank=True, default="")
    checkpoint_id = models.CharField(max_length=32)
    seq = models.IntegerField()
    step = models.IntegerField()
    # NULL, not "": the engine's `parent_id=None` (a thread's first checkpoint) as is.
    parent_id = models.CharField(max_length=32, null=True, blank=True)  # noqa: DJ001
    source = models.CharField(max_length=8, choices=Source)
    created_at = models.DateTimeField()
    document = models.TextField(help_text="JSON: inline values, channel versions, next tasks.")
    metadata = models.TextField(default="{}", help_text="JSON.")
    # NULL for a checkpoint no step produced (input, update, fork), and for those written
    # before it was kept: their parent's tasks then show no results.
    task_writes = models.TextField(  # noqa: DJ001
        null=True,
        blank=True,
        help_text="JSON: the writes of the parent's tasks whose step produced this "
        "checkpoint, by task id (checkpoint.task_writes).",
    )

    class Meta:
        db_table = "bw_checkpoint"
        constraints = [
            models.UniqueConstraint(
                fields=["thread", "ns", "seq"], name="bw_checkpoint_one_per_seq"
            ),
            models.UniqueConstraint(
                fields=["thread", "ns", "checkpoint_id"], name="bw_checkpoint_unique_id"
            ),
        ]
        ordering = ["thread", "ns", "-seq"]

    def __str__(self) -> str:
        return f"{self.thread_id}/{self.ns or '-'}#{self.seq} ({self.checkpoint_id})"


class CheckpointBlob(models.Model):
    """One version of a channel value (JSON): `{"f": value}` or an appended delta `{"b", "a"}`.

    Written once (insert-if-absent) and never updated.
    """

    thread = models.ForeignKey(  # no database-level constraint: see Checkpoint.thread
        Thread,
        on_delete=models.CASCADE,
        related_name="checkpoint_blobs",
        db_index=False,
        db_constraint=False,
    )
    ns = models.TextField(blank=True, default="")
    channel = models.TextField()
    version = models.IntegerField()
    blob = models.TextField()

    class Meta:
        db_table = "bw_checkpoint_blob"
        constraints = [
            models.UniqueConstraint(
                fields=["thread", "ns", "channel", "version"], name="bw_checkpoint_blob_unique"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.thread_id}/{self.ns or '-'} {self.channel}@{self.version}"


class CheckpointWrite(models.Model):
    """A pending write: what one task of the step after a checkpoint left behind.

    One row per `(checkpoint, task)`, replaced on every write (`TaskRecord` encoded).
    """

    thread = models.ForeignKey(  # no database-level constraint: see Checkpoint.thread
        Thread,
        on_delete=models.CASCADE,
        related_name="checkpoint_writes",
        db_index=False,
        db_constraint=False,
    )
    ns = models.TextField(blank=True, default="")
    checkpoint_id = models.CharField(max_length=32)
    task_id = models.TextField()
    record = models.TextField(help_text="JSON: the encoded TaskRecord.")

    class Meta:
        db_table = "bw_checkpoint_write"
        constraints = [
            models.UniqueConstraint(
                fields=["thread", "ns", "checkpoint_id", "task_id"],
                name="bw_checkpoint_write_unique",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.thread_id}/{self.ns or '-'} {self.checkpoint_id}:{self.task_id}"


class RunManager(models.Manager["Run"]):
    def requester_id(self, thread_id: str) -> int | None:
        """Who asked for the thread's work: the creator of its latest run started from
        input (new work, whoever queued it, is theirs); for a thread never started from
        input, of its first start run. `None` for a thread with no start run, or one
        started by code without a user."""
        starts = self.filter(thread_id=thread_id, kind=Run.Kind.START)
        found = (
            starts.filter(input__isnull=False).order_by("-created_at").values("created_by_id")
        ).first() or starts.order_by("created_at").values("created_by_id").first()
        return None if found is None else found["created_by_id"]


class Run(models.Model):
    """A durable run of a graph on a thread: queued, claimed by a worker, finished.

    The worker that owns a run holds a lease and a fencing token; every checkpoint write of
    the run checks the token in its own transaction, so a worker whose lease was taken over
    cannot write any more.
    """

    class Kind(models.TextChoices):
        START = "start"
        RESUME = "resume"

    class Status(models.TextChoices):
        # Enqueued behind the thread's queued run (`start_run(enqueue=True)`); queued in
        # its turn when the runs before it have run.
        WAITING = "waiting"
        QUEUED = "queued"
        RUNNING = "running"
        INTERRUPTED = "interrupted"
        SUCCEEDED = "succeeded"
        FAILED = "failed"
        CANCELLED = "cancelled"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    thread = models.ForeignKey(Thread, on_delete=models.CASCADE, related_name="runs")
    graph = models.CharField(max_length=200)
    kind = models.CharField(max_length=8, choices=Kind, default=Kind.START)
    status = models.CharField(max_length=16, choices=Status, default=Status.QUEUED)
    input = ExactJSONField(null=True, blank=True, help_text="The input, or the resume payload.")
    context = ExactJSONField(
        null=True,
        blank=True,
        help_text="The graph's runtime.context (a JSON object): who requested the run, and "
        "what the caller gave; a resume carries on the context of the run it continues.",
    )
    options = ExactJSONField(
        null=True,
        blank=True,
        help_text="How to run beyond the input (a JSON object, see runtime.options): config, "
        "checkpoint_id to fork from, interrupt_before/after, goto and update.",
    )
    result = ExactJSONField(null=True, blank=True)
    error = models.TextField(blank=True, default="")
    trace_context = models.JSONField(
        null=True,
        blank=True,
        help_text="What the run keeps of the request that queued it: its W3C trace context "
        "(traceparent, tracestate) and request id (beamweaver_core.observability.runs).",
    )
    lease_owner = models.CharField(max_length=255, blank=True, default="")
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    fencing_token = models.BigIntegerField(default=0)
    attempts = models.IntegerField(default=0)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="beamweaver_runs",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = RunManager()

    class Meta:
        db_table = "bw_run"
        constraints = [
            # One writer per thread; and one queued run, which later answers join.
            models.UniqueConstraint(
                fields=["thread"],
                condition=models.Q(status="running"),
                name="bw_run_one_running_per_thread",
            ),
            models.UniqueConstraint(
                fields=["thread"],
                condition=models.Q(status="queued"),
                name="bw_run_one_queued_per_thread",
            ),
        ]
        indexes = [models.Index(fields=["status", "created_at"], name="bw_run_claim_idx")]
        ordering = ["-created_at"]
        # Operators' right to cancel any run (the admin's action; see reviews.cancelling
        # for who else may cancel one in the inbox and the API).
        permissions = [("cancel_run", "Can cancel any run (its pending reviews with it)")]

    def __str__(self) -> str:
        return f"{self.kind} {self.graph} on {self.thread_id} ({self.status})"

    def carries_on(self) -> bool:
        """Whether the run carries on its thread's work rather than starting new work: a
        resume (a decision), or a run without input (a replay or fork from a checkpoint,
        a `goto` or `update` continuation)."""
        return self.kind == Run.Kind.RESUME or self.input is None

    def requester_id(self) -> int | None:
        """Who asked for the thread's work: this run's creator when it starts new work
        from input, else the thread's requester (`RunManager.requester_id`): a run that
        carries the work on (`carries_on`) is not its creator's, whether a reviewer's
        decision or an operator's replay."""
        if not self.carries_on():
            return self.created_by_id
        return Run.objects.requester_id(self.thread_id)


class RunEvent(models.Model):
    """An event a run emitted (node finished, interrupted, ...), kept so a page that missed
    live pushes can replay them. Token-by-token model deltas are not kept."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="events", db_index=False)
    thread = models.ForeignKey(
        Thread, on_delete=models.CASCADE, related_name="events", db_index=False
    )
    seq = models.IntegerField()
    event = models.CharField(max_length=100)
    node = models.CharField(max_length=200, blank=True, default="")
    ns = models.TextField(blank=True, default="")
    data = models.JSONField(null=True, blank=True)
    created_at = models.DateTimeField()

    class Meta:
        db_table = "bw_run_event"
        constraints = [models.UniqueConstraint(fields=["run", "seq"], name="bw_run_event_run_seq")]
        indexes = [models.Index(fields=["thread", "created_at"], name="bw_run_event_thread_idx")]
        ordering = ["created_at", "seq"]

    def __str__(self) -> str:
        return f"{self.event} #{self.seq} of run {self.run_id}"


class ToolExecution(models.Model):
    """One logical tool action, keyed by its idempotency key (see `agent.ledger`).

    Written before the tool runs (`started`) and after (`done`, with the tool message), so
    a step that runs again never repeats a finished action, and an unfinished at-most-once
    action waits for a human.
    """

    class Status(models.TextChoices):
        STARTED = "started"
        DONE = "done"

    key = models.CharField(max_length=64, primary_key=True)
    thread = models.ForeignKey(
        Thread, on_delete=models.CASCADE, related_name="tool_executions", db_index=False
    )
    run = models.ForeignKey(
        Run, on_delete=models.SET_NULL, null=True, blank=True, related_name="tool_executions"
    )
    tool = models.CharField(max_length=200)
    args = models.JSONField(default=dict)
    status = models.CharField(max_length=8, choices=Status, default=Status.STARTED)
    attempts = models.IntegerField(default=1)
    message = ExactJSONField(null=True, blank=True, help_text="The tool message, once done.")
    started_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "bw_tool_execution"
        indexes = [
            models.Index(fields=["thread", "started_at"], name="bw_tool_execution_thread_idx")
        ]
        ordering = ["-started_at"]

    def __str__(self) -> str:
        return f"{self.tool} {self.status} ({self.key[:12]})"


class AsyncSubagentTask(models.Model):
    """A task an agent started on an async subagent (`start_async_task`).

    The task id is the id of the task's own thread, where its runs execute. The parent's
    thread owns the task: only that thread's tools can check, update or cancel it.
    """

    thread = models.OneToOneField(
        Thread, primary_key=True, on_delete=models.CASCADE, related_name="async_task"
    )
    parent_thread = models.ForeignKey(
        Thread, on_delete=models.CASCADE, related_name="async_tasks_started", db_index=False
    )
    parent_run = models.ForeignKey(
        Run, on_delete=models.SET_NULL, null=True, blank=True, related_name="async_tasks_started"
    )
    subagent = models.CharField(max_length=200)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "bw_async_task"
        indexes = [
            models.Index(fields=["parent_thread", "created_at"], name="bw_async_task_parent_idx")
        ]
        ordering = ["created_at"]

    def __str__(self) -> str:
        return f"{self.subagent} task {self.thread_id} of {self.parent_thread_id}"


class WorkerHeartbeat(models.Model):
    """A worker process's liveness: written every few seconds while it runs
    (`runtime.heartbeats`), shown in the admin and the metrics."""

    name = models.CharField(primary_key=True, max_length=255)
    hostname = models.CharField(max_length=255)
    pid = models.IntegerField()
    threads = models.IntegerField()
    busy = models.IntegerField(default=0, help_text="Runs executing at the last beat.")
    completed = models.IntegerField(default=0, help_text="Runs executed since it started.")
    started_at = models.DateTimeField()
    last_seen_at = models.DateTimeField()
    stopped_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "bw_worker_heartbeat"
        ordering = ["-last_seen_at"]

    def __str__(self) -> str:
        return self.name

    @staticmethod
    def alive_after(heartbeat_seconds: float) -> float:
        """Seconds without a beat after which a worker counts as gone (three beats
        missed)."""
        return max(3 * heartbeat_seconds, 15.0)
