"""Fixtures of the runtime tests: a real Redis channel layer under a prefix of its own."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from channels.layers import channel_layers

from tests.support.processes import REDIS_URL


@pytest.fixture
def redis_layer(settings: Any) -> Iterator[str]:
    """This process's channel layer on real Redis; yields the prefix for child processes
    (`BEAMWEAVER_CHANNEL_PREFIX`), so concurrent test runs never see each other's hints."""
    prefix = f"bwtest{uuid.uuid4().hex[:8]}"
    settings.CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            "CONFIG": {"hosts": [REDIS_URL], "prefix": prefix},
        }
    }
    channel_layers.backends.clear()
    yield prefix
    channel_layers.backends.clear()
