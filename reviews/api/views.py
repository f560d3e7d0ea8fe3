"""The review API's endpoints (JSON, token-authenticated; see `reviews.api.openapi`).

Decisions go through `reviews.services.decide` exactly as the inbox's do: the same
validation, policy checks, idempotency by client decision id, audit and status codes.
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.urls import reverse

from beamweaver_core import ratelimit
from beamweaver_core.users import User
from reviews import cancelling, inbox, payloads, reveal
from reviews.api.auth import TokenRequest, error, token_required
from reviews.api.openapi import schema
from reviews.api.representations import item_detail, item_summary
from reviews.http_statuses import http_status
from reviews.models import Decision, ReviewItem
from reviews.permissions import can_reveal
from reviews.services import DecisionRequest, decide

MAX_LIMIT = 100
DEFAULT_LIMIT = 50
MAX_BODY_BYTES = 256 * 1024


def _method_not_allowed(allowed: str) -> JsonResponse:
    response = error(405, "method_not_allowed", f"Use {allowed}.")
    response["Allow"] = allowed
    return response


def _int(value: str | None, default: int) -> int | None:
    if value in (None, ""):
        return default
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


@token_required
def items_view(request: TokenRequest, user: User) -> HttpResponse:
    """The items the token's user may see, oldest first (pending unless `status` says
    otherwise), a page at a time: `?after=<last id>` continues."""
    if request.method != "GET":
        return _method_not_allowed("GET")
    status = request.GET.get("status", "pending")
    limit = _int(request.GET.get("limit"), DEFAULT_LIMIT)
    after = _int(request.GET.get("after"), 0)
    if status not in inbox.STATUSES:
        return error(422, "invalid", f"'status' must be one of {', '.join(inbox.STATUSES)}.")
    if limit is None or not 1 <= limit <= MAX_LIMIT or after is None:
        return error(422, "invalid", f"'limit' must be 1 to {MAX_LIMIT} and 'after' an item id.")
    items = ReviewItem.objects.visible_to(user).select_related("assignee", "claimed_by")
    if status != "all":
        items = items.filter(status=status)
    if request.GET.get("graph"):
        items = items.filter(graph=request.GET["graph"])
    if request.GET.get("tool"):
        items = items.filter(tool_names__contains=[request.GET["tool"]])
    page = list(items.filter(pk__gt=after).order_by("pk")[: limit + 1])
    more = len(page) > limit
    page = page[:limit]
    following = None
    if more:
        query = request.GET.copy()
        query["after"] = str(page[-1].pk)
        following = f"{reverse('reviews:api:items')}?{query.urlencode()}"
    return JsonResponse({"items": [item_summary(i) for i in page], "next": following})


@token_required
def item_view(request: TokenRequest, user: User, pk: int) -> HttpResponse:
    """One item with its payload, redacted as the pages redact it; `?reveal_secrets=1`
    unredacted for a user with `reviews.reveal_secrets` (audited)."""
    if request.method != "GET":
        return _method_not_allowed("GET")
    reveal_secrets = request.GET.get("reveal_secrets", "") == "1"
    item = (
        ReviewItem.objects.visible_to(user)
        .select_related("assignee", "claimed_by")
        .filter(pk=pk)
        .first()
    )
    if item is None:
        return error(404, "not_found", "No such review item.")
    if reveal_secrets:
        if not can_reveal(user):
            return error(
                403,
                "forbidden",
                "The token's user may not reveal secrets (the permission "
                "'reviews.reveal_secrets'); leave out reveal_secrets=1.",
            )
        reveal.record(item, user, source=Decision.Source.API)
    return JsonResponse(item_detail(item, reveal=reveal_secrets))


def _body(request: HttpRequest) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    try:
        raw = request.body
    except RequestDataTooBig:
        raw = b""
    if len(raw) > MAX_BODY_BYTES:
        return {}, [{"index": None, "field": "body", "message": "The body is larger than 256 KiB."}]
    try:
        body = payloads.parse_json(raw.decode("utf-8"), what="The body", max_bytes=MAX_BODY_BYTES)
    except (payloads.PayloadError, UnicodeDecodeError) as exc:
        return {}, [{"index": None, "field": "body", "message": str(exc)}]
    if not isinstance(body, dict):
        return {}, [{"index": None, "field": "body", "message": "The body must be a JSON object."}]
    problems = []
    for key in ("client_decision_id", "digest"):
        if not isinstance(body.get(key), str):
            problems.append(
                {"index": None, "field": key, "message": f"'{key}' is required (a string)."}
            )
    for key in ("interrupt_id", "note", "reason"):
        if body.get(key) is not None and not isinstance(body[key], str):
            problems.append({"index": None, "field": key, "message": f"'{key}' must be a string."})
    return body, problems


@token_required
def decisions_view(request: TokenRequest, user: User, pk: int) -> HttpResponse:
    """Answer an item: the same outcomes, status codes and idempotency as the inbox."""
    if request.method != "POST":
        return _method_not_allowed("POST")
    # Keyed by the token's id, not its header: one token, one count, however it is spelled.
    token_id = str(request.api_token.pk)
    wait = ratelimit.hit("api-decide", token_id, ratelimit.configured("RATE_DECISIONS"))
    if wait is not None:
        return ratelimit.too_many("Too many decisions in a short time.", wait, as_json=True)
    body, problems = _body(request)
    item = ReviewItem.objects.visible_to(user).filter(pk=pk).first()
    answer = body.get("answer")
    if item is not None and item.kind == ReviewItem.Kind.TOOL_REVIEW and isinstance(answer, list):
        answer = {"decisions": answer}
    outcome = decide(
        DecisionRequest(
            item_id=pk,
            run_id=item.run_id if item is not None else None,
            user=user,
            client_decision_id=str(body.get("client_decision_id") or ""),
            digest=str(body.get("digest") or ""),
            interrupt_id=body.get("interrupt_id")
            if isinstance(body.get("interrupt_id"), str)
            else None,
            answer=answer,
            problems=problems,
            source=Decision.Source.API,
            note=str(body.get("note") or ""),
            reason=str(body.get("reason") or ""),
        )
    )
    status = http_status(outcome)
    if status == 404:
        return error(404, "not_found", "No such review item.")
    return JsonResponse({**outcome.to_dict(), "status": status}, status=status)


@token_required
def cancel_run_view(request: TokenRequest, user: User, thread_id: str) -> HttpResponse:
    """Cancel the thread's active run, by the rule of the thread page
    (`reviews.cancelling`): 200, 403 `not_allowed`, 404, or 409 `no_active_run` /
    `not_cancellable`."""
    if request.method != "POST":
        return _method_not_allowed("POST")
    outcome = cancelling.cancel(user, thread_id)
    if not outcome.done or outcome.run is None:
        return error(http_status(outcome), outcome.code, outcome.message)
    return JsonResponse(
        {"thread_id": thread_id, "run": str(outcome.run.id), "status": outcome.run.status}
    )


def openapi_view(request: HttpRequest) -> HttpResponse:
    """The OpenAPI 3.1 description of this API (public: it holds no data)."""
    if request.method != "GET":
        return _method_not_allowed("GET")
    return JsonResponse(schema(request.build_absolute_uri("/")))


__all__ = ["cancel_run_view", "decisions_view", "item_view", "items_view", "openapi_view"]
