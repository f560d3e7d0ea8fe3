"""The review forms: what the item page renders for each kind of item, and how a posted
form becomes a `DecisionRequest`.

A tool review renders one card per action request: a decision choice limited to the
allowed decisions, a message (reject / respond), and an edit form generated from the
tool's JSON Schema (one input per property, JSON text for nested values) with a raw-JSON
fallback. Element ids and field names are built from indexes only, never from argument
names or other untrusted text. Values shown are redacted by the one redaction policy
(`beamweaver_core.redaction`: credentials only); each card lists what was withheld
(`withheld`), and a reviewer who revealed the secrets (`reviews.reveal`) gets the card
unredacted. An edited value left at `[redacted]` keeps the original, so a reviewer never
types a secret back in.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from django import forms
from django.http import QueryDict

from beamweaver_core.agent import HITL
from beamweaver_core.agent.review import EXECUTING_TYPES, ActionRequest, ReviewConfig
from beamweaver_core.exceptions import NotAReviewError
from beamweaver_core.redaction import REDACTED, redact, withheld
from beamweaver_core.runtime import registry
from reviews import payloads, quorum
from reviews.diffs import args_diff
from reviews.models import NotificationEvent, NotificationPreference, ReviewItem
from reviews.permissions import DecisionOffer, can_reveal, decision_offer
from reviews.services import DecisionRequest

DECISION_LABELS = {
    "approve": "Approve",
    "edit": "Edit, then run",
    "reject": "Reject",
    "respond": "Respond instead",
}
_LONG_TEXT = 80
_MISSING = object()


@dataclass
class ArgField:
    """One input of an edit form (a property of the tool's argument schema)."""

    index: int
    name: str
    widget: str  # text, textarea, number, select, json
    value: str
    required: bool = False
    description: str = ""
    options: list[tuple[str, str]] = field(default_factory=list)
    schema: Mapping[str, Any] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    step: str = "any"
    initial: str | None = None
    original: Any = None

    def __post_init__(self) -> None:
        if self.initial is None:
            self.initial = self.value


@dataclass
class ActionForm:
    """One action request's card."""

    index: int
    action: ActionRequest
    config: ReviewConfig
    shown_args: Any
    allowed: list[tuple[str, str]]
    chosen: str = ""
    message: str = ""
    mode: str = "fields"
    fields: list[ArgField] = field(default_factory=list)
    json_text: str = ""
    problems: list[str] = field(default_factory=list)
    diff: list[dict[str, Any]] | None = None
    withheld: list[str] = field(default_factory=list)

    @property
    def prefix(self) -> str:
        return f"d{self.index}"

    @property
    def offered(self) -> list[str]:
        """The decisions this reviewer may choose for the action."""
        return [value for value, _ in self.allowed]


@dataclass
class ReviewForm:
    """Everything the decision form of one item needs."""

    item: ReviewItem
    client_decision_id: str
    actions: list[ActionForm] = field(default_factory=list)
    answer_text: str = ""
    answer_format: str = "json"
    problems: list[str] = field(default_factory=list)
    answer_problems: list[str] = field(default_factory=list)
    invalid_payload: str = ""
    note: str = ""
    reason: str = ""
    offer: DecisionOffer = field(default_factory=lambda: DecisionOffer(True, True, True))
    limits: list[str] = field(default_factory=list)
    revealed: bool = False
    can_reveal: bool = False
    question_withheld: list[str] = field(default_factory=list)

    @property
    def withheld(self) -> bool:
        """Whether redaction withholds something from some card or the question."""
        return bool(self.question_withheld) or any(card.withheld for card in self.actions)

    @property
    def approve_all(self) -> bool:
        return len(self.actions) > 1 and all("approve" in a.offered for a in self.actions)

    @property
    def offered(self) -> set[str]:
        """Every decision offered on some action."""
        return {value for card in self.actions for value in card.offered}

    @property
    def can_submit(self) -> bool:
        """Whether this reviewer can send any answer the service would accept."""
        if not self.offer.decide or self.invalid_payload:
            return False
        if self.item.kind == ReviewItem.Kind.TOOL_REVIEW:
            return bool(self.actions) and all(card.allowed for card in self.actions)
        if self.item.kind == ReviewItem.Kind.BREAKPOINT:
            return self.offer.execute
        return True


def review_form(
    item: ReviewItem,
    user: Any,
    data: QueryDict | None = None,
    problems: Sequence[Mapping[str, Any]] = (),
    *,
    reveal: bool = False,
) -> ReviewForm:
    """The form for `item` as `user` may answer it (only the decisions the review policy
    lets them make, and why the others are missing), bound to posted `data` (after a
    refusal) or fresh; `reveal`: unredacted (the caller checked and audited it)."""
    client_id = (data or {}).get("client_decision_id") or uuid.uuid4().hex
    form = ReviewForm(
        item=item,
        client_decision_id=str(client_id)[:64],
        offer=decision_offer(user, item),
        revealed=reveal,
        can_reveal=can_reveal(user),
    )
    if data is not None:
        form.note = str(data.get("note", ""))
        form.reason = str(data.get("reason", ""))
    if item.kind == ReviewItem.Kind.TOOL_REVIEW:
        try:
            review = HITL.from_value(item.payload, item.interrupt_id)
        except NotAReviewError as exc:
            form.invalid_payload = str(exc)
            return form
        for index, (action, config) in enumerate(
            zip(review.action_requests, review.review_configs, strict=True)
        ):
            card = _action_form(index, action, config, data, reveal=reveal)
            card.allowed = [(d, label) for d, label in card.allowed if d not in _held(form.offer)]
            form.actions.append(card)
    elif item.kind == ReviewItem.Kind.INTERRUPT:
        form.question_withheld = withheld(item.payload)
        if data is not None:
            form.answer_text = data.get("answer", "")
            form.answer_format = "text" if data.get("answer_format") == "text" else "json"
    form.limits = _limits(form)
    _attach_problems(form, problems)
    return form


def _held(offer: DecisionOffer) -> set[str]:
    if not offer.decide:
        return set(DECISION_LABELS)
    held = set() if offer.execute else set(EXECUTING_TYPES)
    return held if offer.edit else held | {"edit"}


def _limits(form: ReviewForm) -> list[str]:
    """Why some decisions are not offered, in the words the page shows."""
    item, offer = form.item, form.offer
    if offer.why == "not_allowed":
        return [
            "The review policy of this item does not let you decide it; a manager can "
            "reassign it to you."
        ]
    left = form.offered
    if item.kind == ReviewItem.Kind.BREAKPOINT:
        if offer.why == "self_approval":
            return [
                "You started this run, so another reviewer must continue it; you can still "
                "cancel the run from its thread page."
            ]
        return []
    if item.kind != ReviewItem.Kind.TOOL_REVIEW:
        return []
    still = " or ".join(
        {"reject": "reject", "respond": "respond instead"}[d]
        for d in ("reject", "respond")
        if d in left
    )
    limits = []
    if offer.why == "self_approval":
        text = "You started this run, so another reviewer must approve it"
        limits.append(f"{text}; you can still {still}." if still else f"{text}.")
    elif offer.why == "already_approved":
        text = (
            f"You approved this item; it needs {quorum.missing(item)} more approval(s) from "
            "other reviewers"
        )
        limits.append(f"{text}; you can still {still}." if still else f"{text}.")
    elif not offer.edit and any("edit" in c.config.allowed_decisions for c in form.actions):
        limits.append(
            f"This item needs {item.required_approvals} approvals from different reviewers, "
            "so it cannot be edited: approve it, or reject it with a message saying what "
            "to change."
        )
    return limits


def _action_form(
    index: int,
    action: ActionRequest,
    config: ReviewConfig,
    data: QueryDict | None,
    *,
    reveal: bool = False,
) -> ActionForm:
    args = payloads.plain(action.args)
    shown = args if reveal else redact(args)
    card = ActionForm(
        index=index,
        action=action,
        config=config,
        shown_args=shown,
        allowed=[(d, DECISION_LABELS[d]) for d in config.allowed_decisions],
        fields=arg_fields(config.args_schema, shown),
        json_text=json.dumps(shown, indent=2, sort_keys=True, ensure_ascii=False),
        withheld=withheld(args),
    )
    if data is not None:
        prefix = card.prefix
        card.chosen = data.get(f"{prefix}-type", "")
        card.message = data.get(f"{prefix}-message", "")
        card.mode = "json" if data.get(f"{prefix}-mode") == "json" else "fields"
        card.json_text = data.get(f"{prefix}-json", card.json_text)
        for arg in card.fields:
            posted = data.get(f"{prefix}-arg{arg.index}")
            if posted is not None:
                arg.value = posted
    return card


def arg_fields(schema: Mapping[str, Any] | None, args: Mapping[str, Any]) -> list[ArgField]:
    """Inputs for the properties of `schema` (then any argument it does not name)."""
    properties = dict((schema or {}).get("properties") or {})
    required = set((schema or {}).get("required") or ())
    names = list(properties) + [k for k in args if k not in properties]
    fields = []
    for index, name in enumerate(names):
        sub = properties.get(name)
        if not isinstance(sub, Mapping):
            sub = _schema_of(args.get(name))
        value = args.get(name, _MISSING)
        arg = _arg_field(index, str(name), sub, value, name in required)
        arg.original = value
        fields.append(arg)
    return fields


def _schema_of(value: Any) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"type": "boolean"}
    if isinstance(value, int | float):
        return {"type": "number"}
    if isinstance(value, str):
        return {"type": "string"}
    return {}


def _types(schema: Mapping[str, Any]) -> tuple[set[str], bool]:
    declared = schema.get("type")
    kinds = {declared} if isinstance(declared, str) else set(declared or ())
    return kinds - {"null"}, "null" in kinds


def _arg_field(
    index: int, name: str, schema: Mapping[str, Any], value: Any, required: bool
) -> ArgField:
    kinds, _ = _types(schema)
    description = str(schema.get("description") or "")
    enum = schema.get("enum")
    if enum and all(isinstance(v, str) for v in enum):
        options = [("", "(none)")] if not required else []
        options += [(v, v) for v in enum]
        current = value if isinstance(value, str) else ""
        return ArgField(index, name, "select", current, required, description, options, schema)
    if kinds == {"boolean"}:
        options = [("true", "true"), ("false", "false")]
        if not required:
            options.insert(0, ("", "(not set)"))
        current = "" if value is _MISSING or value is None else json.dumps(value)
        return ArgField(index, name, "select", current, required, description, options, schema)
    if kinds and kinds <= {"integer", "number"}:
        current = "" if value is _MISSING or value is None else _number_text(value)
        step = "1" if kinds == {"integer"} else "any"
        return ArgField(
            index, name, "number", current, required, description, schema=schema, step=step
        )
    if kinds == {"string"}:
        current = value if isinstance(value, str) else ""
        long = len(current) > _LONG_TEXT or "\n" in current or (schema.get("maxLength") or 0) > 200
        widget = "textarea" if long else "text"
        return ArgField(index, name, widget, current, required, description, schema=schema)
    current = "" if value is _MISSING else json.dumps(value, indent=2, ensure_ascii=False)
    return ArgField(index, name, "json", current, required, description, schema=schema)


def _number_text(value: Any) -> str:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return json.dumps(value)
    return repr(value) if isinstance(value, float) else str(value)


def _attach_problems(form: ReviewForm, problems: Sequence[Mapping[str, Any]]) -> None:
    for problem in problems:
        message = str(problem.get("message", ""))
        index = problem.get("index")
        name = str(problem.get("field") or "")
        if name == "answer" and form.item.kind == ReviewItem.Kind.INTERRUPT:
            form.answer_problems.append(message)
            continue
        if not isinstance(index, int) or not 0 <= index < len(form.actions):
            form.problems.append(message)
            continue
        card = form.actions[index]
        arg = _field_for(card, name)
        if arg is not None:
            arg.problems.append(message)
        else:
            card.problems.append(message)


def _field_for(card: ActionForm, name: str) -> ArgField | None:
    prefix = "edited_action.args."
    if not name.startswith(prefix):
        return None
    path = name[len(prefix) :]
    for arg in card.fields:
        if path == arg.name or path.startswith(arg.name + "."):
            return arg
    return None


class _FieldError(ValueError):
    pass


def _parse_arg(arg: ArgField, raw: str) -> Any:
    # Browsers send textarea line breaks as CRLF.
    raw = raw.replace("\r\n", "\n")
    if raw == arg.initial and arg.original is not _MISSING:
        return arg.original
    kinds, nullable = _types(arg.schema)
    text = raw.strip()
    if arg.widget == "select" and kinds == {"boolean"}:
        if text == "":
            return _MISSING
        return text == "true"
    if arg.widget == "number":
        if text == "":
            return None if nullable and arg.required else _MISSING
        try:
            number = float(text)
        except ValueError:
            raise _FieldError(f"{arg.name}: '{text[:40]}' is not a number.") from None
        if kinds == {"integer"} or (number.is_integer() and "." not in text and "e" not in text):
            return int(number) if number.is_integer() else number
        return number
    if arg.widget == "json":
        if text == "":
            return _MISSING
        try:
            return payloads.parse_json(text, what=f"Field {arg.name}")
        except payloads.PayloadError as exc:
            raise _FieldError(str(exc)) from None
    if raw == "" and not arg.required:
        return None if nullable else _MISSING
    return raw


def _edited_args(card: ActionForm, data: QueryDict) -> tuple[Any, list[dict[str, Any]]]:
    prefix = card.prefix
    original = payloads.plain(card.action.args)
    if data.get(f"{prefix}-mode") == "json":
        try:
            parsed = payloads.parse_json(
                data.get(f"{prefix}-json", ""), what="The edited arguments"
            )
        except payloads.PayloadError as exc:
            return None, [_problem(card.index, "edited_action.args", str(exc))]
        return restore_redacted(parsed, original), []
    args: dict[str, Any] = {}
    problems = []
    for arg in card.fields:
        raw = data.get(f"{prefix}-arg{arg.index}")
        if raw is None:
            continue
        try:
            value = _parse_arg(arg, raw)
        except _FieldError as exc:
            problems.append(_problem(card.index, f"edited_action.args.{arg.name}", str(exc)))
            continue
        if value is not _MISSING:
            args[arg.name] = value
    return restore_redacted(args, original), problems


def restore_redacted(edited: Any, original: Any) -> Any:
    """`edited` with every value still reading `[redacted]` put back to the original."""
    if edited == REDACTED and original is not _MISSING and original != REDACTED:
        return original
    if isinstance(edited, dict) and isinstance(original, Mapping):
        return {k: restore_redacted(v, original.get(k, _MISSING)) for k, v in edited.items()}
    if isinstance(edited, list) and isinstance(original, list) and len(edited) == len(original):
        return [restore_redacted(e, o) for e, o in zip(edited, original, strict=True)]
    return edited


def _problem(index: int | None, name: str, message: str) -> dict[str, Any]:
    return {"index": index, "field": name, "message": message}


def decision_request(
    item: ReviewItem, data: QueryDict, user: Any, form: ReviewForm
) -> DecisionRequest:
    """The `DecisionRequest` a posted item form makes (parse problems included)."""
    answer: Any = None
    problems: list[dict[str, Any]] = []
    if item.kind == ReviewItem.Kind.TOOL_REVIEW:
        decisions = []
        approve_all = "approve_all" in data
        for card in form.actions:
            kind = "approve" if approve_all else data.get(f"{card.prefix}-type", "")
            if not kind:
                problems.append(_problem(card.index, "type", "Choose a decision for this action."))
                continue
            chosen: dict[str, Any] = {"type": kind}
            message = data.get(f"{card.prefix}-message", "")
            if kind in ("reject", "respond") and message.strip():
                chosen["message"] = message
            elif kind == "respond":
                chosen["message"] = ""
            if kind == "edit":
                args, found = _edited_args(card, data)
                problems.extend(found)
                chosen["edited_action"] = {"name": card.action.name, "args": args}
            decisions.append(chosen)
        answer = {"decisions": decisions}
        if form.invalid_payload:
            problems.append(_problem(None, "answer", form.invalid_payload))
    elif item.kind == ReviewItem.Kind.INTERRUPT:
        text = data.get("answer", "")
        if data.get("answer_format") == "text":
            answer = text
        else:
            try:
                answer = payloads.parse_json(text)
            except payloads.PayloadError as exc:
                problems.append(_problem(None, "answer", str(exc)))
    return DecisionRequest(
        item_id=item.pk,
        user=user,
        client_decision_id=data.get("client_decision_id", ""),
        digest=data.get("digest", ""),
        interrupt_id=data.get("interrupt_id"),
        answer=answer,
        problems=problems,
        note=data.get("note", "").replace("\r\n", "\n").strip(),
        reason=data.get("reason", "") if item.kind == ReviewItem.Kind.TOOL_REVIEW else "",
    )


def preview(card: ActionForm, data: QueryDict) -> None:
    """Fill `card.diff` and field problems for the edit in `data` (nothing is decided)."""
    args, problems = _edited_args(card, data)
    if problems or not isinstance(args, Mapping):
        for problem in problems:
            arg = _field_for(card, problem["field"])
            (arg.problems if arg else card.problems).append(problem["message"])
        card.diff = None
        return
    card.diff = args_diff(payloads.plain(card.action.args), args)
    review = HITL.from_value(
        {"action_requests": [card.action.to_dict()], "review_configs": [card.config.to_dict()]}
    )
    decision = {"type": "edit", "edited_action": {"name": card.action.name, "args": args}}
    try:
        HITL.validate_decisions(review, [decision])
    except Exception as exc:
        for problem in getattr(exc, "problems", ()):
            text = str(problem.get("message", "")).replace(
                "decisions[0]", f"decisions[{card.index}]"
            )
            arg = _field_for(card, str(problem.get("field", "")))
            (arg.problems if arg else card.problems).append(text)


class StartRunForm(forms.Form):
    """Start a run: a registered graph, and its input (a message for agents)."""

    graph = forms.ChoiceField(label="Graph or agent")
    message = forms.CharField(
        label="Message to the agent",
        required=False,
        widget=forms.Textarea(attrs={"rows": 4}),
        max_length=20_000,
        help_text="For agents: becomes the first user message.",
    )
    input_json = forms.CharField(
        label="Input (JSON object)",
        required=False,
        widget=forms.Textarea(attrs={"rows": 6, "spellcheck": "false"}),
        help_text='For plain graphs: the input state, e.g. {"amount": 250}.',
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["graph"].choices = [(n, n) for n in registry.registered_names()]

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        name = cleaned.get("graph")
        if not name:
            return cleaned
        message = (cleaned.get("message") or "").strip()
        text = (cleaned.get("input_json") or "").strip()
        if text:
            try:
                value = payloads.parse_json(text, what="The input")
            except payloads.PayloadError as exc:
                self.add_error("input_json", str(exc))
                return cleaned
            if not isinstance(value, dict):
                self.add_error("input_json", "The input must be a JSON object, like {}.")
                return cleaned
            cleaned["input"] = value
        elif message:
            if not is_agent(name):
                self.add_error(
                    "message", f"{name} is not an agent; give its input as a JSON object."
                )
                return cleaned
            cleaned["input"] = {"messages": [{"role": "user", "content": message}]}
        elif is_agent(name):
            self.add_error("message", "Type a message for the agent.")
        else:
            cleaned["input"] = {}
        if message and text:
            self.add_error("input_json", "Give either a message or a JSON input, not both.")
        return cleaned


class NotificationPreferenceForm(forms.ModelForm):  # type: ignore[type-arg]
    """What a reviewer wants to be emailed about."""

    email_events = forms.MultipleChoiceField(
        label="Email me about",
        choices=NotificationEvent.choices,
        required=False,
        widget=forms.CheckboxSelectMultiple,
    )

    class Meta:
        model = NotificationPreference
        fields = ["email_enabled", "email_events"]
        labels = {"email_enabled": "Send me email notifications"}


def is_agent(name: str) -> bool:
    """Whether the registered graph `name` is an agent (its input is a conversation)."""
    from beamweaver_core.agent.agent import Agent

    try:
        target = registry.load(name)
    except Exception:
        return False
    return isinstance(target, Agent) or (isinstance(target, type) and issubclass(target, Agent))


__all__ = [
    "ActionForm",
    "ArgField",
    "NotificationPreferenceForm",
    "ReviewForm",
    "StartRunForm",
    "arg_fields",
    "decision_request",
    "is_agent",
    "preview",
    "restore_redacted",
    "review_form",
]
