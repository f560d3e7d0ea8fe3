"""Admin for the review app, staff only.

Items, approvals and decisions change only through the runtime and the decision service,
and the audit log is append-only, so the admin shows them without letting anyone edit
them; payloads are shown redacted. Review policies are edited here (they override the
settings' defaults); API tokens are created here (the token is shown once) and revoked,
each by its owner (a superuser may create one for another reviewer; all audited);
notifications waiting in the outbox can be sent again. Every action names the permission
it needs (`permissions=`), so a staff user who may only view a model runs none of them.
"""

from __future__ import annotations

import json
from typing import Any, ClassVar

from django import forms
from django.contrib import admin, messages
from django.db.models import ForeignKey, QuerySet
from django.forms import ModelChoiceField
from django.http import HttpRequest
from django.utils import timezone

from beamweaver_core.admin.display import ReadOnlyAdmin, pretty_json
from beamweaver_core.redaction import redact_text
from beamweaver_core.requests import authed_user
from beamweaver_core.users import User, username_path
from reviews.models import (
    ApiToken,
    Approval,
    AuditEvent,
    Decision,
    NotificationPreference,
    OutboxMessage,
    ReviewItem,
    ReviewPolicy,
)
from reviews.permissions import can_review, reviewers


@admin.register(ReviewItem)
class ReviewItemAdmin(ReadOnlyAdmin[ReviewItem]):
    list_display = (
        "id",
        "kind",
        "graph",
        "tools",
        "thread_id",
        "status",
        "assignee",
        "claimed_by",
        "due_at",
        "policy_version",
        "created_at",
    )
    list_filter = ("status", "kind", "graph")
    search_fields = ("thread__id", "interrupt_id")
    date_hierarchy = "created_at"
    exclude = ("payload_json", "search_text")
    readonly_fields = ("payload",)

    @admin.display(description="Tools")
    def tools(self, obj: ReviewItem) -> str:
        return ", ".join(obj.tool_names)

    @admin.display(description="Payload (redacted)")
    def payload(self, obj: ReviewItem) -> str:
        return pretty_json(obj.payload_json)


@admin.register(Decision)
class DecisionAdmin(ReadOnlyAdmin[Decision]):
    list_display = ("item", "summary", "user", "reason_code", "source", "created_at")
    list_filter = ("source", "outcome", "reason_code")
    search_fields = ("item__thread__id", username_path("user"), "client_decision_id")
    exclude = ("body_json", "answer_json")
    readonly_fields = ("answer",)

    @admin.display(description="Answer (redacted)")
    def answer(self, obj: Decision) -> str:
        return pretty_json(obj.answer_json)


@admin.register(AuditEvent)
class AuditEventAdmin(ReadOnlyAdmin[AuditEvent]):
    list_display = (
        "at",
        "actor_name",
        "action",
        "summary",
        "item_ref",
        "thread_ref",
        "outcome",
    )
    list_filter = ("action", "source", "graph")
    search_fields = ("thread_ref", "actor_name", "item_ref", "client_decision_id")
    date_hierarchy = "at"
    # The answer, the edit diff and refusal messages can quote secrets a reviewer typed.
    exclude = ("decision", "diff", "message")
    readonly_fields = ("answer", "edit_diff", "details")

    @admin.display(description="decision")
    def answer(self, obj: AuditEvent) -> str:
        return pretty_json(json.dumps(obj.decision))

    @admin.display(description="diff")
    def edit_diff(self, obj: AuditEvent) -> str:
        return pretty_json(json.dumps(obj.diff))

    @admin.display(description="message")
    def details(self, obj: AuditEvent) -> str:
        return redact_text(obj.message)


@admin.register(Approval)
class ApprovalAdmin(ReadOnlyAdmin[Approval]):
    list_display = ("item", "user", "source", "created_at")
    search_fields = ("item__thread__id", username_path("user"))
    exclude = ("body_json",)


@admin.register(ReviewPolicy)
class ReviewPolicyAdmin(admin.ModelAdmin[ReviewPolicy]):
    list_display = (
        "name",
        "graph",
        "tool",
        "enabled",
        "required_approvals",
        "deadline",
        "on_expiry",
        "version",
        "updated_at",
    )
    list_filter = ("enabled", "on_expiry")
    search_fields = ("name", "graph", "tool")
    filter_horizontal = ("reviewer_groups", "allowed_responders")
    readonly_fields = ("version", "updated_at")
    fieldsets = (
        (None, {"fields": ("name", "enabled", "graph", "tool", "version", "updated_at")}),
        (
            "Who reviews",
            {
                "fields": (
                    "reviewer_groups",
                    "allowed_responders",
                    "assignee",
                    "required_approvals",
                )
            },
        ),
        (
            "Deadline",
            {"fields": ("deadline", "remind_before", "escalate_to", "on_expiry", "expiry_message")},
        ),
    )


class ApiTokenForm(forms.ModelForm[ApiToken]):
    """A new token: its owner must hold the reviewer permission (a token acts as them)."""

    owner: ClassVar[User | None] = None
    """Who creates the token (set on the form class `get_form` makes for a request)."""

    class Meta:
        model = ApiToken
        fields = ("name", "user", "expires_at")

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        user = cleaned.get("user", self.owner)
        if user is not None and not can_review(user):
            raise forms.ValidationError(
                f"{user.get_username()} does not have the reviewer permission "
                "(reviews.review); a token acts as its user, so it would be refused."
            )
        return cleaned


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin[ApiToken]):
    """Staff create and revoke their own tokens; only a superuser sees everyone's, and may
    create one for another reviewer (audited, as every token issued or revoked is)."""

    list_display = ("name", "user", "key", "created_at", "last_used_at", "expires_at", "revoked_at")
    list_filter = ("revoked_at",)
    search_fields = ("name", username_path("user"), "key")
    actions = ("revoke",)
    form = ApiTokenForm

    def get_queryset(self, request: HttpRequest) -> QuerySet[ApiToken]:
        tokens = super().get_queryset(request)
        user = authed_user(request)
        return tokens if user.is_superuser else tokens.filter(user=user)

    def get_fields(self, request: HttpRequest, obj: ApiToken | None = None) -> tuple[str, ...]:
        if obj is None:
            # The user field is offered to superusers only: staff create their own tokens.
            if request.user.is_superuser:
                return ("name", "user", "expires_at")
            return ("name", "expires_at")
        return ("name", "user", "key", "created_at", "last_used_at", "expires_at", "revoked_at")

    def get_readonly_fields(
        self, request: HttpRequest, obj: ApiToken | None = None
    ) -> tuple[str, ...]:
        if obj is None:
            return ()
        return ("user", "key", "created_at", "last_used_at", "revoked_at")

    def get_form(
        self,
        request: HttpRequest,
        obj: ApiToken | None = None,
        change: bool = False,
        **kwargs: Any,  # modelform_factory's options, as Django's `get_form` takes them
    ) -> type[forms.ModelForm[ApiToken]]:
        form = super().get_form(request, obj, change, **kwargs)
        if issubclass(form, ApiTokenForm):  # always: `form` is built from `self.form`
            form.owner = authed_user(request)
        return form

    def formfield_for_foreignkey(
        self,
        db_field: ForeignKey[Any, Any],
        request: HttpRequest,
        **kwargs: Any,  # the form field's options, as Django's method takes them
    ) -> ModelChoiceField[Any] | None:
        if db_field.name == "user":
            kwargs["queryset"] = reviewers().order_by(username_path())
        return super().formfield_for_foreignkey(db_field, request, **kwargs)

    def save_model(
        self, request: HttpRequest, obj: ApiToken, form: forms.ModelForm[ApiToken], change: bool
    ) -> None:
        if change:
            super().save_model(request, obj, form, change)
            return
        user = authed_user(request)
        if not user.is_superuser:
            obj.user = user
        raw = ApiToken.objects.save_new(obj, by=user, source="admin")
        messages.warning(
            request, f"Copy the token now, it is not shown again: {raw}", extra_tags="token"
        )

    def has_delete_permission(self, request: HttpRequest, obj: ApiToken | None = None) -> bool:
        return False

    @admin.action(description="Revoke the selected tokens", permissions=["change"])
    def revoke(self, request: HttpRequest, queryset: QuerySet[ApiToken]) -> None:
        count = sum(
            token.revoke(by=authed_user(request), source="admin")
            for token in queryset.filter(revoked_at__isnull=True).select_related("user")
        )
        self.message_user(request, f"{count} token(s) revoked.")


@admin.register(OutboxMessage)
class OutboxMessageAdmin(admin.ModelAdmin[OutboxMessage]):
    """Read-only rows; `send_again` needs the change permission."""

    list_display = (
        "id",
        "event",
        "channel",
        "target",
        "status",
        "attempts",
        "next_attempt_at",
        "sent_at",
    )
    list_filter = ("status", "channel", "event")
    search_fields = ("target", "last_error")
    actions = ("send_again",)

    def get_readonly_fields(
        self, request: HttpRequest, obj: OutboxMessage | None = None
    ) -> list[str]:
        return [field.name for field in OutboxMessage._meta.fields]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: OutboxMessage | None = None) -> bool:
        return False

    @admin.action(description="Send again now", permissions=["change"])
    def send_again(self, request: HttpRequest, queryset: QuerySet[OutboxMessage]) -> None:
        count = queryset.exclude(status=OutboxMessage.Status.SENT).update(
            status=OutboxMessage.Status.PENDING, attempts=0, next_attempt_at=timezone.now()
        )
        self.message_user(request, f"{count} notification(s) queued again.")


@admin.register(NotificationPreference)
class NotificationPreferenceAdmin(admin.ModelAdmin[NotificationPreference]):
    list_display = ("user", "email_enabled")
    search_fields = (username_path("user"),)
