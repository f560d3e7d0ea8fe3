"""`/assistants`: the registered graphs (search, count, get, graph, schemas, subgraphs)."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, JsonResponse

from beamweaver_core.protocol import assistants
from beamweaver_core.protocol.body import flag, json_body
from beamweaver_core.protocol.errors import ProtocolError, not_found

READ_ONLY = (
    "Assistants are the graphs registered in settings.BEAMWEAVER['GRAPHS'] (one assistant "
    "each, named after its graph); they cannot be created, changed or deleted over the API."
)


def _matching(user: Any, body: dict[str, Any]) -> list[dict[str, Any]]:
    found = [assistants.assistant(name) for name in assistants.names(user)]
    if body.get("graph_id"):
        found = [a for a in found if a["graph_id"] == body["graph_id"]]
    if body.get("name"):
        wanted = str(body["name"]).lower()
        found = [a for a in found if wanted in a["name"].lower()]
    metadata = body.get("metadata") or {}
    return [a for a in found if all(a["metadata"].get(k) == v for k, v in metadata.items())]


def search(request: HttpRequest, user: Any) -> JsonResponse:
    body = json_body(request, "AssistantSearchRequest")
    found = _matching(user, body)
    key = body.get("sort_by") or "created_at"
    found.sort(key=lambda a: (str(a[key]), a["name"]), reverse=body.get("sort_order") == "desc")
    offset, limit = body.get("offset", 0), body.get("limit", 10)
    page = found[offset : offset + limit]
    if body.get("select"):
        page = [{k: a[k] for k in body["select"] if k in a} for a in page]
    response = JsonResponse(page, safe=False)
    if offset + limit < len(found):
        response["X-Pagination-Next"] = str(offset + limit)
    return response


def count(request: HttpRequest, user: Any) -> int:
    return len(_matching(user, json_body(request, "AssistantCountRequest")))


def _name(user: Any, assistant_id: str) -> str:
    name = assistants.graph_name(assistant_id, user)
    if name is None:
        raise not_found(f"Assistant {assistant_id!r}")
    return name


def get(request: HttpRequest, user: Any, assistant_id: str) -> dict[str, Any]:
    return assistants.assistant(_name(user, assistant_id))


def graph(request: HttpRequest, user: Any, assistant_id: str) -> dict[str, Any]:
    name = _name(user, assistant_id)
    raw = request.GET.get("xray", "false")
    depth = int(raw) if raw.isdigit() else 100 if flag(request.GET, "xray") else 0
    return assistants.drawing(assistants.compiled(name), min(depth, 100))


def schemas(request: HttpRequest, user: Any, assistant_id: str) -> dict[str, Any]:
    name = _name(user, assistant_id)
    return assistants.schemas(name, assistants.compiled(name))


def subgraphs(
    request: HttpRequest, user: Any, assistant_id: str, namespace: str | None = None
) -> dict[str, Any]:
    name = _name(user, assistant_id)
    found = assistants.subgraphs(assistants.compiled(name), flag(request.GET, "recurse"))
    if namespace is not None:
        return {ns: schema for ns, schema in found.items() if ns == namespace}
    return found


def read_only(request: HttpRequest, user: Any, **path: Any) -> None:
    raise ProtocolError(405, READ_ONLY)


__all__ = ["count", "get", "graph", "read_only", "schemas", "search", "subgraphs"]
