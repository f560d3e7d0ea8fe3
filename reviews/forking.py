"""Time travel from the thread page: the form that replays or forks a thread at one of its
checkpoints, and the audited fork (`beamweaver_core.runtime.forks` makes the run).

The form has one JSON field per state key of the graph, filled with the checkpoint's
(redacted) values; only the keys whose text changed are written, as `update_state(...,
as_node=...)` would write them. Who may: a reviewer who sees the thread and may change it
(`reviews.thread_rights`), the rule `/lg` applies to its forks too.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from django import forms
from django.db import transaction

from beamweaver_core.exceptions import ThreadBusyError
from beamweaver_core.models import Thread
from beamweaver_core.redaction import REDACTED
from beamweaver_core.runtime import registry
from beamweaver_core.runtime.access import locked_if_visible
from beamweaver_core.runtime.forks import ForkError, QuestionPendingError, fork
from beamweaver_core.users import User
from reviews import payloads
from reviews.forms import choice_field
from reviews.models import AuditEvent
from reviews.outcomes import Code, Outcome
from reviews.thread_rights import change_refusal

REPLAY = "replay"
FORK = "fork"


def state_keys(thread: Thread, values: Mapping[str, Any]) -> list[str]:
    """The keys the fork form offers: the graph's state keys, else the state's own."""
    graph = registry.compiled_graph(thread.graph, None)
    return sorted(graph.keys) if graph.keys is not None else sorted(values)


def merged_keys(thread: Thread) -> frozenset[str]:
    """The state keys whose updates go through a reducer."""
    return frozenset(registry.compiled_graph(thread.graph, None).reducers)


class ForkForm(forms.Form):
    """Replay from a checkpoint, or fork there with edited values (JSON per state key)."""

    checkpoint_id = forms.CharField(max_length=64, widget=forms.HiddenInput)
    mode = forms.ChoiceField(
        choices=[(REPLAY, "Replay from here"), (FORK, "Fork with edits")],
        widget=forms.RadioSelect,
    )
    as_node = forms.ChoiceField(required=False, label="Write the edits as node")

    def __init__(
        self,
        *args: Any,
        keys: list[str],
        nodes: list[str],
        current: Mapping[str, Any],
        merged: frozenset[str] = frozenset(),
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        self.keys = keys
        # A key with a reducer merges what is written into its value (a list appends): its
        # field starts empty and takes what to add; the others start with their value.
        self.current = {k: "" if k in merged else payloads.canonical(current.get(k)) for k in keys}
        choice_field(self, "as_node").choices = [("", "(as the step's own nodes)")] + [
            (n, n) for n in nodes
        ]
        for position, key in enumerate(keys):
            shown = json.dumps(current.get(key), ensure_ascii=False)
            self.fields[f"value_{position}"] = forms.CharField(
                required=False,
                label=key,
                initial="" if key in merged else json.dumps(current.get(key), ensure_ascii=False),
                help_text=(
                    f"Merged by the key's reducer: what you enter is added to {shown[:200]}"
                    if key in merged
                    else ""
                ),
                widget=forms.Textarea(attrs={"rows": 3, "spellcheck": "false"}),
            )

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        edits: dict[str, Any] = {}
        for position, key in enumerate(self.keys):
            text = (cleaned.get(f"value_{position}") or "").strip()
            if not text:
                continue
            try:
                value = json.loads(text)
            except ValueError as exc:
                self.add_error(f"value_{position}", f"Not JSON: {exc}.")
                continue
            if payloads.canonical(value) == self.current[key]:
                continue
            if REDACTED in text:
                # The field showed the value redacted: writing it back would replace the
                # secret with the placeholder's text.
                self.add_error(
                    f"value_{position}",
                    f"This value holds secrets shown as {REDACTED}: it cannot be edited here.",
                )
                continue
            edits[key] = value
        if cleaned.get("mode") == FORK and not edits and not self.errors:
            raise forms.ValidationError(
                "Nothing was changed: edit a value to fork, or choose “Replay from here”."
            )
        cleaned["edits"] = edits
        return cleaned

    def widgets(self) -> list[forms.BoundField]:
        """The value fields, in state key order (for the template)."""
        return [self[f"value_{position}"] for position in range(len(self.keys))]


def fork_thread(user: User, thread_id: str, cleaned: Mapping[str, Any]) -> Outcome:
    """Replay or fork the thread as the valid form's data asks, audited; the run in
    `Outcome.run`. Checked and done in one transaction under the thread's lock: a pause
    that hides the thread from `user`, or asks what they may not reject, updates the
    thread's row before it writes its review items, so a check made before taking the
    lock could fork a thread `user` no longer sees or may no longer change."""
    with transaction.atomic():
        thread = locked_if_visible(user, thread_id)
        if thread is None:
            return Outcome(Code.NOT_FOUND, "No such thread.")
        refusal = change_refusal(user, thread)
        if refusal is not None:
            return refusal
        return _forked(user, thread, cleaned)


def _forked(user: User, thread: Thread, cleaned: Mapping[str, Any]) -> Outcome:
    edits = dict(cleaned.get("edits") or {}) if cleaned["mode"] == FORK else {}
    as_node = (cleaned.get("as_node") or None) if edits else None
    try:
        made = fork(
            thread.id, cleaned["checkpoint_id"], user=user, values=edits or None, as_node=as_node
        )
    except QuestionPendingError as exc:
        return Outcome(Code.QUESTION_PENDING, str(exc))
    except ForkError as exc:
        return Outcome(Code.INVALID, str(exc))
    except ThreadBusyError as exc:
        return Outcome(Code.BUSY, str(exc))
    action = "Forked" if edits else "Replayed"
    AuditEvent.objects.create(
        actor=user,
        actor_name=user.get_username(),
        action=AuditEvent.Action.FORKED,
        thread_ref=thread.id,
        graph=thread.graph,
        summary=f"{action} from checkpoint {made.from_checkpoint[:12]}",
        message=(
            f"{action} thread from checkpoint {made.from_checkpoint}"
            + (f", editing {', '.join(sorted(edits))}" if edits else "")
            + f"; run {made.run.id}."
        ),
        decision={
            "from_checkpoint": made.from_checkpoint,
            "written_checkpoint": made.written_checkpoint,
            "as_node": as_node,
            "edited": sorted(edits),
            "run_id": str(made.run.id),
        },
        source="web",
    )
    return Outcome(Code.ACCEPTED, f"{action}: run {str(made.run.id)[:8]} is queued.", run=made.run)


__all__ = ["FORK", "REPLAY", "ForkForm", "fork_thread", "state_keys"]
