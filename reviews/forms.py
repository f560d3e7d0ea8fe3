"""The inbox's Django forms: starting a run, and a reviewer's notification preferences.
(The item page's review form, built from each item's payload, is `reviews.review_form`.)"""

from __future__ import annotations

from typing import Any

from django import forms

from beamweaver_core.runtime import registry
from reviews import payloads
from reviews.models import NotificationEvent, NotificationPreference


def choice_field(form: forms.BaseForm, name: str) -> forms.ChoiceField:
    """The form's own copy of its declared choice field `name` (`form.fields` types every
    field as a plain `Field`), to set the choices of this form."""
    field = form.fields[name]
    if not isinstance(field, forms.ChoiceField):
        raise TypeError(f"{type(form).__name__}.{name} is not a choice field.")
    return field


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
        self.graph_names = list(registry.registered_names())
        choice_field(self, "graph").choices = [(n, n) for n in self.graph_names]

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


__all__ = ["NotificationPreferenceForm", "StartRunForm", "choice_field", "is_agent"]
