"""Statements compiled once per process (`reviews.statements`)."""

from __future__ import annotations

from typing import Any

from reviews import statements


def test_a_key_compiles_once_and_no_key_every_time() -> None:
    built: list[int] = []

    def build() -> tuple[str, tuple[Any, ...]]:
        built.append(1)
        return "SELECT %s", (len(built),)

    first = statements.compiled(("test", "once"), build)
    again = statements.compiled(("test", "once"), build)
    assert first == again == ("SELECT %s", (1,))
    assert len(built) == 1
    assert statements.compiled(None, build) == ("SELECT %s", (2,))
    assert statements.compiled(None, build) == ("SELECT %s", (3,))


def test_the_least_recently_used_statement_goes_first(monkeypatch: Any) -> None:
    monkeypatch.setattr(statements, "CACHED", 2)
    monkeypatch.setattr(statements, "_COMPILED", type(statements._COMPILED)())
    calls: list[str] = []

    def build(name: str) -> Any:
        return lambda: calls.append(name) or (name, ())

    statements.compiled("a", build("a"))
    statements.compiled("b", build("b"))
    statements.compiled("a", build("a"))  # used again: "b" is now the oldest
    statements.compiled("c", build("c"))
    statements.compiled("a", build("a"))
    statements.compiled("b", build("b"))
    assert calls == ["a", "b", "c", "b"]
