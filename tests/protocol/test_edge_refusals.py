"""Requests to `/lg` refused before any protocol view runs (a path no route matches, a NUL
in the query string) are answered in the protocol's error shape, `{"detail": ...}`, as
every other refusal there: they were Django's HTML 404 page and the inbox's plain-text 400
(found by tests/protocol/test_fuzz.py)."""

from __future__ import annotations

import pytest
from django.test import Client

from tests.protocol.conftest import client_of

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    "url",
    ["/lg/threads/a%2Fb/runs", "/lg/assistants/linear/subgraphs/a%2Fb", "/lg/nothing/here"],
)
def test_a_path_no_route_matches_is_a_404_in_the_protocols_shape(url: str) -> None:
    response = client_of("alice").get(url)

    assert response.status_code == 404
    assert response.json() == {"detail": "No such API endpoint or object."}


def test_a_nul_in_the_query_string_is_a_400_in_the_protocols_shape() -> None:
    response = Client().get("/lg/assistants/linear/graph?xray=%00")

    assert response.status_code == 400
    assert response.json() == {
        "detail": "The request has a NUL character (%00) in its query string, which nothing "
        "here accepts. Remove it and send the request again."
    }


def test_the_review_api_keeps_its_own_error_shape() -> None:
    response = Client().get("/api/v1/nothing/here")

    assert response.status_code == 404
    assert response.json()["code"] == "not_found"
