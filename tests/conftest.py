"""Shared fixtures: the test graphs are registered for every test."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.graphs import TEST_GRAPHS


@pytest.fixture(autouse=True)
def _test_graphs(request: pytest.FixtureRequest) -> Any:
    if "django_db_setup" not in request.fixturenames and not request.node.get_closest_marker(
        "django_db"
    ):
        yield
        return
    settings = request.getfixturevalue("settings")
    settings.BEAMWEAVER = {
        **settings.BEAMWEAVER,
        "GRAPHS": {**settings.BEAMWEAVER["GRAPHS"], **TEST_GRAPHS},
    }
    yield
