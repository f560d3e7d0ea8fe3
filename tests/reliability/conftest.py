"""Fixtures of the reliability tests: the review graphs and the hostile agent are
registered, and every test gets its own side-effects file."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from bench.hostile import effects
from bench.hostile.agents import GRAPHS
from tests.reviews.conftest import _review_graphs  # noqa: F401  (registers the graphs)


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
