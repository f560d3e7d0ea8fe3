"""The OpenAPI document of `/lg` is served and matches the routes: every route is
documented with the methods it answers, every documented operation is routed, and its
schemas are valid JSON Schema whose references resolve."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.test import Client
from django.urls import URLPattern
from jsonschema import Draft202012Validator

from beamweaver_core.protocol import urls
from tests.protocol.conftest import client_of

pytestmark = pytest.mark.django_db


@pytest.fixture
def document() -> dict[str, Any]:
    response = Client().get("/lg/openapi.json")
    assert response.status_code == 200
    return dict(response.json())


def _as_route(path: str) -> str:
    return re.sub(r"\{(\w+)\}", r"<str:\1>", path.lstrip("/"))


def test_every_route_is_documented_and_every_documented_path_is_routed(
    document: dict[str, Any],
) -> None:
    routed = {str(p.pattern) for p in urls.urlpatterns if isinstance(p, URLPattern)}
    documented = {_as_route(path) for path in document["paths"]}
    assert routed == documented
    assert document["openapi"] == "3.1.0"
    assert document["servers"] == [{"url": "http://testserver/lg"}]


def test_each_path_answers_exactly_the_documented_methods(document: dict[str, Any]) -> None:
    client = Client()
    for path, operations in document["paths"].items():
        concrete = "/lg" + re.sub(r"\{\w+\}", "x", path)
        for method in ("get", "post", "patch", "delete"):
            response = getattr(client, method)(concrete, content_type="application/json")
            if method in operations:
                assert response.status_code != 405, (method, path)
            else:
                assert response.status_code == 405, (method, path)
                assert response.json()["detail"].startswith("Method not allowed")


def test_the_operations_the_sdk_calls_are_documented(document: dict[str, Any]) -> None:
    """The paths `langgraph-sdk`'s clients call for the protocol's contract."""
    sdk = {
        ("post", "/assistants/search"),
        ("post", "/assistants/count"),
        ("get", "/assistants/{assistant_id}"),
        ("get", "/assistants/{assistant_id}/graph"),
        ("get", "/assistants/{assistant_id}/schemas"),
        ("get", "/assistants/{assistant_id}/subgraphs"),
        ("post", "/threads"),
        ("get", "/threads/{thread_id}"),
        ("patch", "/threads/{thread_id}"),
        ("delete", "/threads/{thread_id}"),
        ("post", "/threads/{thread_id}/copy"),
        ("post", "/threads/search"),
        ("post", "/threads/count"),
        ("get", "/threads/{thread_id}/state"),
        ("post", "/threads/{thread_id}/state"),
        ("get", "/threads/{thread_id}/state/{checkpoint_id}"),
        ("post", "/threads/{thread_id}/state/checkpoint"),
        ("post", "/threads/{thread_id}/history"),
        ("get", "/threads/{thread_id}/stream"),
        ("post", "/threads/{thread_id}/runs"),
        ("get", "/threads/{thread_id}/runs"),
        ("post", "/threads/{thread_id}/runs/stream"),
        ("post", "/threads/{thread_id}/runs/wait"),
        ("get", "/threads/{thread_id}/runs/{run_id}"),
        ("delete", "/threads/{thread_id}/runs/{run_id}"),
        ("get", "/threads/{thread_id}/runs/{run_id}/join"),
        ("get", "/threads/{thread_id}/runs/{run_id}/stream"),
        ("post", "/threads/{thread_id}/runs/{run_id}/cancel"),
        ("post", "/runs"),
        ("post", "/runs/stream"),
        ("post", "/runs/wait"),
        ("post", "/runs/batch"),
        ("post", "/runs/cancel"),
    }
    documented = {(m, p) for p, ops in document["paths"].items() for m in ops}
    assert sdk <= documented


def test_schemas_are_valid_and_every_reference_resolves(document: dict[str, Any]) -> None:
    components = document["components"]["schemas"]
    for schema in components.values():
        Draft202012Validator.check_schema(schema)
    text = str(document)
    for name in set(re.findall(r"#/components/schemas/(\w+)", text)):
        assert name in components, name
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            assert operation["operationId"], (method, path)
            assert operation["responses"], (method, path)
            if path not in ("/info", "/ok", "/openapi.json"):
                assert "401" in operation["responses"], (method, path)


def test_protected_routes_need_a_token_and_public_ones_do_not() -> None:
    client = Client()
    refused = client.get("/lg/assistants/ask")
    assert refused.status_code == 401
    assert refused["WWW-Authenticate"] == 'Bearer realm="beamweaver"'
    assert "x-api-key" in refused.json()["detail"]
    assert client.get("/lg/ok").json() == {"ok": True}
    assert client.get("/lg/info").status_code == 200


def test_browsers_on_configured_origins_may_call(settings: Any) -> None:
    settings.BEAMWEAVER = {**settings.BEAMWEAVER, "LG_CORS_ORIGINS": ["https://chat.example.com"]}
    client = Client()
    preflight = client.options("/lg/threads/search", HTTP_ORIGIN="https://chat.example.com")
    assert preflight.status_code == 204
    assert preflight["Access-Control-Allow-Origin"] == "https://chat.example.com"
    assert "x-api-key" in preflight["Access-Control-Allow-Headers"]
    other = client.options("/lg/threads/search", HTTP_ORIGIN="https://evil.example.com")
    assert "Access-Control-Allow-Origin" not in other


def test_the_document_says_what_the_routes_answer(document: dict[str, Any]) -> None:
    """Found by tests/protocol/test_fuzz.py: the document said 202 where `/runs/cancel`
    answers 204, 200 with an assistant where the assistant writes answer 405, a required
    body where an empty one is read as `{}`, and a string checkpoint id where a new
    thread's state has none."""
    client = client_of("alice")
    thread = client.post("/lg/threads", content_type="application/json").json()["thread_id"]
    answers = {
        ("post", "/runs/cancel"): client.post(
            "/lg/runs/cancel", {"status": "all"}, content_type="application/json"
        ),
        ("post", "/assistants"): client.post("/lg/assistants", content_type="application/json"),
        ("delete", "/assistants/{assistant_id}"): client.delete("/lg/assistants/linear"),
        ("post", "/threads/count"): client.generic("POST", "/lg/threads/count", b""),
    }
    for (method, path), response in answers.items():
        assert str(response.status_code) in document["paths"][path][method]["responses"], path
    assert answers["post", "/threads/count"].json() == 1
    state = client.get(f"/lg/threads/{thread}/state").json()
    schema = document["paths"]["/threads/{thread_id}/state"]["get"]["responses"]["200"]
    validator = Draft202012Validator(
        {**schema["content"]["application/json"]["schema"], "components": document["components"]}
    )
    assert state["checkpoint"]["checkpoint_id"] is None
    assert list(validator.iter_errors(state)) == []
    assert not document["paths"]["/threads/count"]["post"]["requestBody"]["required"]
