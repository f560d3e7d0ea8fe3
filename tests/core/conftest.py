"""Fixtures of the core tests."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.test import Client


@pytest.fixture
def staff() -> Client:
    """A client logged in as a superuser (the admin's pages)."""
    user = User.objects.create_superuser("admin", "admin@example.com", "pw-admin-123")
    client = Client()
    client.force_login(user)
    return client
