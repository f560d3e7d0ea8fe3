"""How a run runs, beyond its input: a JSON object kept with the run (`Run.options`) and
applied by the worker that executes it.

Keys (all optional):

- `config`: `{"recursion_limit": int, "configurable": {...}}`; the configurable values
  reach the graph's `runtime.config` (the runtime's own keys `thread_id`,
  `checkpoint_ns`, `checkpoint_id` and `run_id` cannot be set this way);
- `checkpoint_id`: fork the thread from that checkpoint (time travel);
- `interrupt_before`, `interrupt_after`: `"*"` or a list of node names, static
  breakpoints for this run on top of the graph's own;
- `goto` (a node name, a send `{"node": name, "input": any JSON value}`, or a list
  mixing them) and `update` (a JSON object): with no input, the run continues the thread as
  `Command(goto=..., update=...)`, each send as `Send(node, input)` (the node runs once
  with that input instead of the state); a resume run applies them with its answers,
  `Command(resume=..., goto=..., update=...)`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from beamweaver_core.graph.compiled import CompiledGraph
from beamweaver_core.types import Command, Send

KEYS = frozenset(
    {"config", "checkpoint_id", "interrupt_before", "interrupt_after", "goto", "update"}
)
RESERVED_CONFIGURABLE = frozenset({"thread_id", "checkpoint_ns", "checkpoint_id", "run_id"})


def check(options: Mapping[str, Any] | None, graph: CompiledGraph) -> dict[str, Any] | None:
    """`options` checked against `graph` (plain JSON, as the module docstring says);
    `None` when empty. Raises `ValueError` saying what is wrong."""
    if not options:
        return None
    if not isinstance(options, Mapping):
        raise ValueError(f"The options of a run must be a JSON object, got {options!r:.100}.")
    unknown = sorted(set(options) - KEYS)
    if unknown:
        raise ValueError(f"Unknown run option(s) {unknown}; known: {sorted(KEYS)}.")
    checked = {k: v for k, v in options.items() if v is not None}
    config = checked.get("config")
    if config is not None:
        if not isinstance(config, Mapping):
            raise ValueError("'config' must be a JSON object.")
        limit = config.get("recursion_limit")
        if limit is not None and (
            not isinstance(limit, int) or isinstance(limit, bool) or limit < 1
        ):
            raise ValueError(
                f"'config.recursion_limit' must be a whole number of at least 1, got {limit!r}."
            )
        configurable = config.get("configurable")
        if configurable is not None and not isinstance(configurable, Mapping):
            raise ValueError("'config.configurable' must be a JSON object.")
    checkpoint_id = checked.get("checkpoint_id")
    if checkpoint_id is not None and not isinstance(checkpoint_id, str):
        raise ValueError(f"'checkpoint_id' must be a string, got {checkpoint_id!r:.100}.")
    for key in ("interrupt_before", "interrupt_after"):
        if key in checked:
            _nodes(checked[key], graph, key)
    if "goto" in checked:
        _nodes(
            [t if isinstance(t, str) else t["node"] for t in _goto(checked["goto"])], graph, "goto"
        )
    update = checked.get("update")
    if update is not None and not isinstance(update, Mapping):
        raise ValueError(f"'update' must be a JSON object of state keys, got {update!r:.100}.")
    return checked or None


def _nodes(value: Any, graph: CompiledGraph, key: str) -> frozenset[str]:
    if value == "*":
        return frozenset(graph.nodes)
    if not isinstance(value, list) or not all(isinstance(n, str) for n in value):
        raise ValueError(f"'{key}' must be \"*\" or a list of node names, got {value!r:.100}.")
    unknown = sorted(set(value) - set(graph.nodes))
    if unknown:
        raise ValueError(
            f"'{key}' names node(s) {unknown} that graph {graph.name!r} does not have; its "
            f"nodes: {sorted(graph.nodes)}."
        )
    return frozenset(value)


def _goto(value: Any) -> list[Any]:
    """The goto targets as a list, each a node name or a send; `ValueError` for any
    other shape."""
    targets = value if isinstance(value, list) else [value]
    for target in targets:
        if isinstance(target, str):
            continue
        if (
            not isinstance(target, Mapping)
            or not isinstance(target.get("node"), str)
            or set(target) != {"node", "input"}
        ):
            raise ValueError(
                '\'goto\' must be a node name, a send {"node": name, "input": value}, '
                f"or a list of them, got {value!r:.100}."
            )
    return targets


def configured_graph(graph: CompiledGraph, options: Mapping[str, Any] | None) -> CompiledGraph:
    """`graph` with the run's breakpoints added to its own."""
    if not options or not ({"interrupt_before", "interrupt_after"} & set(options)):
        return graph
    clone = graph.with_checkpointer(graph.checkpointer)
    if "interrupt_before" in options:
        clone.interrupt_before = graph.interrupt_before | _nodes(
            options["interrupt_before"], graph, "interrupt_before"
        )
    if "interrupt_after" in options:
        clone.interrupt_after = graph.interrupt_after | _nodes(
            options["interrupt_after"], graph, "interrupt_after"
        )
    return clone


def configured(config: dict[str, Any], options: Mapping[str, Any] | None) -> dict[str, Any]:
    """The run's engine `config` with the options' config and fork point applied."""
    if not options:
        return config
    given = options.get("config") or {}
    configurable = {
        k: v for k, v in (given.get("configurable") or {}).items() if k not in RESERVED_CONFIGURABLE
    }
    merged = {**config, "configurable": {**configurable, **config["configurable"]}}
    if given.get("recursion_limit") is not None:
        merged["recursion_limit"] = given["recursion_limit"]
    if options.get("checkpoint_id"):
        merged["configurable"]["checkpoint_id"] = options["checkpoint_id"]
    return merged


ONE_SHOT = frozenset({"checkpoint_id", "goto", "update"})


def carried(options: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The options a resume takes over from the run it continues: all but the one-shot
    fork point and continuation, so the breakpoints it paused at are still pending."""
    kept = {k: v for k, v in (options or {}).items() if k not in ONE_SHOT}
    return kept or None


def continuation(options: Mapping[str, Any] | None, answers: Any = None) -> Command | None:
    """What a run continues the thread with: `Command(resume=answers, goto, update)`, or
    `None` when it has neither answers nor a goto or update (continue as it stands)."""
    options = options or {}
    goto, update = options.get("goto"), options.get("update")
    if answers is None and goto is None and update is None:
        return None
    if goto is not None:
        goto = [t if isinstance(t, str) else Send(t["node"], t["input"]) for t in _goto(goto)]
    return Command(goto=goto, update=update, resume=answers)


__all__ = ["KEYS", "ONE_SHOT", "carried", "check", "configured", "configured_graph", "continuation"]
