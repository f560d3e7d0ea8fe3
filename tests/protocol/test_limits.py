"""Limits of `/lg` that need no running graph (in-process, without a live server)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.core.cache import cache
from django.test import Client

from beamweaver_core.models import Thread
from tests.protocol.conftest import api_user, token_for

pytestmark = pytest.mark.django_db


def test_resumes_count_against_the_users_decision_rate(settings: Any) -> None:
    settings.BEAMWEAVER = {**settings.BEAMWEAVER, "RATE_DECISIONS": "2/60"}
    cache.clear()
    token = token_for(api_user("alice"))
    Thread.objects.create(id="lg-rate-1", graph="approval")
    client = Client(HTTP_X_API_KEY=token)
    body = json.dumps({"assistant_id": "approval", "command": {"resume": True}})
    answers = [
        client.post("/lg/threads/lg-rate-1/runs", body, content_type="application/json")
        for _ in range(3)
    ]
    assert [a.status_code for a in answers] == [409, 409, 429]  # nothing to resume, then limited
    assert "Too many decisions" in answers[2].json()["detail"]
