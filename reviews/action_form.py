"""One action request's card on the item page, as a Django form: the decision chosen, a
message (reject / respond), and an edit form generated from the tool's JSON Schema
(`reviews.arg_fields`) with a raw-JSON fallback.

The form's prefix is `d<index>` and its ids are its input names (`d0-type`, `d0-arg1`,
`d0-json`), built from indexes only, never from argument names or other untrusted text.
Values shown are redacted by the one redaction policy unless the reviewer revealed them;
an edit keeps the original of every value posted as it was shown, and refuses a changed
one that still holds `[redacted]` (`reviews.arg_fields.restore_withheld`).
Nothing is refused here that the decision service would decide: the chosen decision is
whatever was posted (the service refuses one the policy does not allow, and audits it),
and an edit is parsed only when the chosen decision is `edit`; what cannot be parsed is
an error of its input (`edited_args` also returns it in the service's shape).
"""

from __future__ import annotations

import json
from typing import Any, cast

from django import forms
from django.core.exceptions import NON_FIELD_ERRORS
from django.forms.utils import ErrorList

from beamweaver_core.agent.review import ActionRequest, ReviewConfig
from beamweaver_core.redaction import REDACTED, redact, withheld
from reviews import payloads
from reviews.answers import problem
from reviews.arg_fields import ArgBoundField, ArgField, FieldError, arg_fields
from reviews.withheld_edits import MISSING, placeholders_added, restore_withheld

DECISION_LABELS = {
    "approve": "Approve",
    "edit": "Edit, then run",
    "reject": "Reject",
    "respond": "Respond instead",
}
ARGS_PATH = "edited_action.args"


class _PostedText(forms.CharField):
    """Text as posted, unstripped; an input left out of the post keeps its initial value."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(required=False, strip=False, **kwargs)

    def bound_data(self, data: Any, initial: Any) -> Any:
        return initial if data is None else data


class ActionForm(forms.Form):
    """One action request's card."""

    type = forms.CharField(required=False, strip=False)
    message = forms.CharField(required=False, strip=False, widget=forms.Textarea)
    mode = forms.CharField(required=False)
    json = _PostedText(widget=forms.Textarea)

    def __init__(
        self,
        index: int,
        action: ActionRequest,
        config: ReviewConfig,
        data: Any = None,
        *,
        reveal: bool = False,
    ) -> None:
        super().__init__(data, prefix=f"d{index}", auto_id="%s")
        args = payloads.plain(action.args)
        self.index = index
        self.action = action
        self.config = config
        self.shown_args: Any = args if reveal else redact(args)
        self.allowed = [(d, DECISION_LABELS[d]) for d in config.allowed_decisions]
        self.withheld = withheld(args)
        self.diff: list[dict[str, Any]] | None = None
        self.fields["message"].widget.attrs = {"rows": "3"}
        self.fields["json"].widget.attrs = {"rows": "8", "class": "json", "spellcheck": "false"}
        self.fields["json"].initial = json.dumps(
            self.shown_args, indent=2, sort_keys=True, ensure_ascii=False
        )
        for arg in arg_fields(config.args_schema, self.shown_args, args):
            self.fields[f"arg{arg.index}"] = arg

    @property
    def offered(self) -> list[str]:
        """The decisions this reviewer may choose for the action."""
        return [value for value, _ in self.allowed]

    @property
    def chosen(self) -> str:
        return str(self["type"].value() or "")

    @property
    def message_text(self) -> str:
        """The message as posted (reject / respond)."""
        self.errors  # noqa: B018 (cleans a bound form once)
        return str(getattr(self, "cleaned_data", {}).get("message") or "")

    def bound_to(self, data: Any) -> ActionForm:
        """This card bound to posted `data` (as the service reads it: redacted)."""
        return ActionForm(self.index, self.action, self.config, data)

    @property
    def edit_mode(self) -> str:
        """`json` when the reviewer edits the raw JSON, else `fields`."""
        return "json" if self["mode"].value() == "json" else "fields"

    @property
    def json_text(self) -> str:
        return str(self["json"].value() or "")

    @property
    def args(self) -> list[ArgBoundField]:
        """The argument inputs, in the schema's order."""
        names = [name for name, field in self.fields.items() if isinstance(field, ArgField)]
        return [cast(ArgBoundField, self[name]) for name in names]

    @property
    def problems(self) -> ErrorList:
        """What is wrong with the card as a whole (not with one input)."""
        return self.non_field_errors()

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        if self.chosen == "edit" and "approve_all" not in self.data:
            for found in self.edited_args()[1]:
                self.add_problem(found["field"], found["message"])
        return cleaned

    def edited_args(self) -> tuple[Any, list[dict[str, Any]]]:
        """The arguments the posted edit makes (values left as shown restored) and the
        problems of reading them, each `{index, field, message}` as the service reports
        it."""
        self.errors  # noqa: B018 (cleans a bound form once)
        cleaned = getattr(self, "cleaned_data", {})
        if self.edit_mode == "json":
            try:
                parsed = payloads.parse_json(cleaned.get("json") or "", what="The edited arguments")
            except payloads.PayloadError as exc:
                return None, [problem(self.index, ARGS_PATH, str(exc))]
            return self._restored(parsed, [])
        args: dict[str, Any] = {}
        problems = []
        for bound in self.args:
            raw = cleaned.get(bound.name)
            if raw is None:
                continue
            try:
                value = bound.arg.parse(raw)
            except FieldError as exc:
                problems.append(problem(self.index, f"{ARGS_PATH}.{bound.arg.arg_name}", str(exc)))
                continue
            if value is not MISSING:
                args[bound.arg.arg_name] = value
        return self._restored(args, problems)

    def _restored(
        self, edited: Any, problems: list[dict[str, Any]]
    ) -> tuple[Any, list[dict[str, Any]]]:
        """`edited` with the values left as shown put back, and `problems` with each
        changed argument that still holds `[redacted]` while something is withheld: the
        reviewer cannot see the secret it stands for, so storing it would replace the
        secret with the placeholder's text."""
        original = payloads.plain(self.action.args)
        restored = restore_withheld(edited, self.shown_args, original)
        if not self.withheld:
            return restored, problems
        changed = restored.items() if isinstance(restored, dict) else [("", restored)]
        for name, value in changed:
            if placeholders_added(value, original.get(name, MISSING) if name else original):
                problems.append(
                    problem(
                        self.index,
                        f"{ARGS_PATH}.{name}" if name else ARGS_PATH,
                        f"{name or 'The arguments'}: still holds {REDACTED}, a secret withheld "
                        f"from you. Leave the value as it was to keep it, or write it without "
                        f"{REDACTED}.",
                    )
                )
        return restored, problems

    def add_problem(self, path: str, message: str) -> None:
        """Show `message` on the input the service's field `path` names (an argument, or
        inside one), else on the card; each message once."""
        name = self._input_for(path)
        errors = self.errors
        key = name or NON_FIELD_ERRORS
        if key not in errors:
            errors[key] = self.error_class(
                error_class=None if name else "nonfield", renderer=self.renderer
            )
        if message not in errors[key]:
            errors[key].append(message)

    def _input_for(self, path: str) -> str | None:
        prefix = ARGS_PATH + "."
        if not path.startswith(prefix):
            return None
        path = path[len(prefix) :]
        for bound in self.args:
            name = bound.arg.arg_name
            if path == name or path.startswith(name + "."):
                return bound.name
        return None


__all__ = ["DECISION_LABELS", "ActionForm"]
