"""Graphs and agents registered by name in `settings.BEAMWEAVER["GRAPHS"]`.

A registry entry is `"module.path:attribute"`, naming a `CompiledGraph`, an `Agent`
instance, an `Agent` subclass (module-style agent), or a zero-argument factory returning
one of those. Workers, commands and views all look graphs up here, so a name means the
same graph everywhere.
"""

from __future__ import annotations

import functools
import importlib
from typing import Any

from beamweaver_core.checkpoint.base import Checkpointer
from beamweaver_core.conf import conf
from beamweaver_core.exceptions import BeamWeaverError
from beamweaver_core.graph.compiled import CompiledGraph


class UnknownGraphError(BeamWeaverError, LookupError):
    """No graph is registered under that name."""


def registered_names() -> list[str]:
    return sorted(conf.graphs)


@functools.cache
def _resolve(target: str) -> Any:
    module_path, _, attribute = target.partition(":")
    module = importlib.import_module(module_path)
    obj: Any = module
    for part in attribute.split("."):
        obj = getattr(obj, part)
    return obj


def load(name: str) -> Any:
    """The registered object (graph, agent, agent class or factory) for `name`."""
    graphs = conf.graphs
    target = graphs.get(name)
    if target is None:
        raise UnknownGraphError(
            f"No graph named {name!r} is registered; registered: {sorted(graphs)}. Add it to "
            "settings.BEAMWEAVER['GRAPHS'] as 'module.path:attribute'."
        )
    return _resolve(target)


def compiled_graph(name: str, checkpointer: Checkpointer | None) -> CompiledGraph:
    """The graph registered as `name`, saving to `checkpointer`."""
    return as_graph(load(name), checkpointer)


def as_graph(obj: Any, checkpointer: Checkpointer | None) -> CompiledGraph:
    if isinstance(obj, CompiledGraph):
        return obj.with_checkpointer(checkpointer)
    graph_for = getattr(obj, "graph_for", None)
    if callable(graph_for):
        graph = graph_for(checkpointer)
        if isinstance(graph, CompiledGraph):
            return graph
    if callable(obj) and not isinstance(obj, type):
        return as_graph(obj(), checkpointer)
    raise UnknownGraphError(
        f"{obj!r} is not a graph: register a CompiledGraph, an Agent, an Agent subclass, or a "
        "factory returning one."
    )


__all__ = ["UnknownGraphError", "as_graph", "compiled_graph", "load", "registered_names"]
