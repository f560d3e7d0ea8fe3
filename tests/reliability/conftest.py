"""Fixtures of the reliability tests: the review graphs and the hostile agent are
registered, and every test gets its own side-effects file."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest

from bench.hostile import effects
from bench.hostile.agents import GRAPHS
from tests.browser.conftest import browser  # noqa: F401  (Chromium for the browser tests)
from tests.reliability.live import live_server
from tests.reviews.conftest import (  # noqa: F401  (fixtures: the graphs, a reviewer)
    _review_graphs,
    alice,
)


@pytest.fixture(autouse=True)
def _hostile_graphs(request: pytest.FixtureRequest) -> Iterator[None]:
    if not request.node.get_closest_marker("django_db"):
        yield
        return
    settings = request.getfixturevalue("settings")
    settings.BEAMWEAVER = {
        **settings.BEAMWEAVER,
        "GRAPHS": {**settings.BEAMWEAVER["GRAPHS"], **GRAPHS},
    }
    yield


@pytest.fixture
def effects_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh file that the fake tools append their side effects to."""
    path = tmp_path / "effects.jsonl"
    monkeypatch.setenv(effects.EFFECTS_ENV, str(path))
    return path


@pytest.fixture(scope="module")
def server(
    django_db_setup: Any, django_db_blocker: Any, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    """The product's daphne on the test database for one test module; its base URL."""
    with ExitStack() as stack:
        with django_db_blocker.unblock():
            base = stack.enter_context(live_server(tmp_path_factory.mktemp("server")))
        yield base
