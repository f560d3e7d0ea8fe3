"""JSON Schemas for tool arguments, derived from type hints. Arguments are checked against
a tool's schema by `agent.schema_validation`."""

from __future__ import annotations

import inspect
import json
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal, Union, get_args, get_origin, get_type_hints, is_typeddict

RUNTIME_PARAMETER = "runtime"
"""A tool function's parameter with this name receives the `ToolRuntime`; it is not an
argument the model sees."""

EMPTY_OBJECT_SCHEMA: Mapping[str, Any] = {"type": "object", "properties": {}}

_SCALARS: dict[Any, str] = {str: "string", int: "integer", float: "number", bool: "boolean"}
_ARRAYS = (list, tuple, set, frozenset, Sequence, typing.Sequence)
_OBJECTS = (dict, Mapping, typing.Mapping)


def function_schema(fn: Callable[..., Any]) -> dict[str, Any]:
    """The JSON Schema of `fn`'s arguments, read from its signature and type hints.

    Parameters without a default are required; JSON-safe defaults are recorded as
    `default`; `Annotated[T, "text"]` adds a description; `runtime` is left out.
    """
    signature = inspect.signature(fn)
    try:
        hints = get_type_hints(fn, include_extras=True)
    except NameError as exc:
        raise TypeError(
            f"Cannot read the type hints of {fn.__qualname__}: {exc}. Define the types it "
            "uses at module level."
        ) from None
    properties: dict[str, Any] = {}
    required: list[str] = []
    for name, param in signature.parameters.items():
        if name == RUNTIME_PARAMETER:
            continue
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise TypeError(
                f"{fn.__qualname__} takes *{name}; a tool's arguments must be named parameters "
                "so that they have a schema."
            )
        where = f"parameter {name!r} of {fn.__qualname__}"
        schema = type_schema(hints.get(name, Any), where)
        if param.default is param.empty:
            required.append(name)
        elif _is_json(param.default):
            schema["default"] = param.default
        properties[name] = schema
    result: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        result["required"] = required
    result["additionalProperties"] = False
    return result


def type_schema(hint: Any, where: str) -> dict[str, Any]:
    """The JSON Schema of one type hint (`where` names it in error messages)."""
    origin = get_origin(hint)
    args = get_args(hint)
    if origin is typing.Annotated:
        schema = type_schema(args[0], where)
        notes = [m for m in args[1:] if isinstance(m, str)]
        if notes:
            schema["description"] = " ".join(notes)
        return schema
    if origin is typing.NotRequired or origin is typing.Required:
        return type_schema(args[0], where)
    if hint is Any or hint is object:
        return {}
    if hint is None or hint is type(None):
        return {"type": "null"}
    if hint in _SCALARS:
        return {"type": _SCALARS[hint]}
    if origin is Literal:
        return _literal_schema(args)
    if origin is Union or origin is types.UnionType:
        return _union_schema(args, where)
    if is_typeddict(hint):
        return _typeddict_schema(hint, where)
    if hint in _ARRAYS or origin in _ARRAYS:
        return _array_schema(origin or hint, args, where)
    if hint in _OBJECTS or origin in _OBJECTS:
        schema = {"type": "object"}
        if len(args) == 2 and args[1] is not Any:
            schema["additionalProperties"] = type_schema(args[1], where)
        return schema
    raise TypeError(
        f"Cannot derive a JSON Schema for {where}: {hint!r} is not supported. Use str, int, "
        "float, bool, None, list/tuple, dict, Literal, Optional/Union, TypedDict or "
        "Annotated, or subclass Tool with an explicit args_schema."
    )


def _literal_schema(values: tuple[Any, ...]) -> dict[str, Any]:
    schema: dict[str, Any] = {"enum": list(values)}
    kinds = {_SCALARS.get(type(v)) for v in values}
    if len(kinds) == 1 and None not in kinds:
        schema["type"] = kinds.pop()
    return schema


def _union_schema(members: tuple[Any, ...], where: str) -> dict[str, Any]:
    schemas = [type_schema(m, where) for m in members if m is not type(None)]
    nullable = len(schemas) < len(members)
    if len(schemas) == 1 and nullable and set(schemas[0]) == {"type"}:
        return {"type": [schemas[0]["type"], "null"]}
    if nullable:
        schemas.append({"type": "null"})
    return schemas[0] if len(schemas) == 1 else {"anyOf": schemas}


def _typeddict_schema(hint: Any, where: str) -> dict[str, Any]:
    fields = get_type_hints(hint, include_extras=True)
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {k: type_schema(v, f"{where} (key {k!r})") for k, v in fields.items()},
    }
    # With postponed annotations `__required_keys__` misses `NotRequired[...]`; read the
    # markers from the resolved hints too.
    required = [
        k
        for k, v in fields.items()
        if get_origin(v) is typing.Required
        or (k in hint.__required_keys__ and get_origin(v) is not typing.NotRequired)
    ]
    if required:
        schema["required"] = required
    return schema


def _array_schema(container: Any, args: tuple[Any, ...], where: str) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "array"}
    if container is tuple and args and args[-1] is not Ellipsis:
        schema["prefixItems"] = [type_schema(a, where) for a in args]
        schema["minItems"] = schema["maxItems"] = len(args)
    elif args:
        schema["items"] = type_schema(args[0], where)
    if container in (set, frozenset):
        schema["uniqueItems"] = True
    return schema


def _is_json(value: Any) -> bool:
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError):
        return False
    return True


__all__ = [
    "EMPTY_OBJECT_SCHEMA",
    "RUNTIME_PARAMETER",
    "function_schema",
    "type_schema",
]
