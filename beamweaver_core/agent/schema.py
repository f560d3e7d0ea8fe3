"""JSON Schemas for tool arguments: derived from type hints, and checked with jsonschema.

The arguments checked come from a model, and a reviewer's edits, and the schema itself may
come from an MCP server: its `pattern` and `patternProperties` regular expressions run on
RE2 (`beamweaver_core.patterns`), in time linear in the text, instead of jsonschema's
backtracking `re` (on which `^(a+)+$` against 30 `a`s and a `!` takes minutes). A schema
with a pattern RE2 cannot run (look-ahead, look-behind, backreferences) is refused when the
tool is checked, saying which pattern and why.
"""

from __future__ import annotations

import inspect
import json
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal, Union, get_args, get_origin, get_type_hints, is_typeddict

from jsonschema import Draft202012Validator, FormatChecker, validators
from jsonschema.exceptions import SchemaError, ValidationError

from beamweaver_core.patterns import PatternError, compile_pattern

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


def _pattern(validator: Any, pattern: str, instance: Any, schema: Any) -> Any:
    if validator.is_type(instance, "string") and compile_pattern(pattern).search(instance) is None:
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


def _pattern_properties(validator: Any, patterns: Any, instance: Any, schema: Any) -> Any:
    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in patterns.items():
        compiled = compile_pattern(pattern)
        for key, value in instance.items():
            if compiled.search(key) is not None:
                yield from validator.descend(value, subschema, path=key, schema_path=pattern)


_ADDITIONAL = Draft202012Validator.VALIDATORS["additionalProperties"]


def _additional_properties(validator: Any, additional: Any, instance: Any, schema: Any) -> Any:
    # jsonschema's own keyword matches the names against `patternProperties` with `re`.
    if "patternProperties" not in schema or not validator.is_type(instance, "object"):
        yield from _ADDITIONAL(validator, additional, instance, schema)
        return
    known = schema.get("properties", {})
    patterns = [compile_pattern(p) for p in schema["patternProperties"]]
    extras = sorted(
        k for k in instance if k not in known and not any(p.search(k) for p in patterns)
    )
    if validator.is_type(additional, "object"):
        for extra in extras:
            yield from validator.descend(instance[extra], additional, path=extra)
    elif additional is False and extras:
        names = ", ".join(repr(e) for e in extras)
        verb = "does" if len(extras) == 1 else "do"
        listed = ", ".join(repr(p) for p in sorted(schema["patternProperties"]))
        yield ValidationError(f"{names} {verb} not match any of the regexes: {listed}")


_Validator: type[Draft202012Validator] = validators.extend(  # type: ignore[no-untyped-call]
    Draft202012Validator,
    validators={
        "pattern": _pattern,
        "patternProperties": _pattern_properties,
        "additionalProperties": _additional_properties,
    },
)

# The meta-schema marks `pattern` and the names of `patternProperties` as `format: regex`:
# checked by RE2 here, so a pattern it cannot run is refused with the tool.
_SCHEMA_FORMATS = FormatChecker()
_SCHEMA_FORMATS.checkers = dict(Draft202012Validator.FORMAT_CHECKER.checkers)
_SCHEMA_FORMATS.checks("regex", raises=PatternError)(compile_pattern)


def check_schema(schema: Any, owner: str) -> Draft202012Validator:
    """A validator for `schema`, or `ValueError` saying why it is not a JSON Schema (or has
    a pattern RE2 cannot run)."""
    if not isinstance(schema, Mapping):
        raise ValueError(f"The args_schema of {owner} must be a JSON Schema dict, got {schema!r}.")
    try:
        Draft202012Validator.check_schema(schema, format_checker=_SCHEMA_FORMATS)
    except SchemaError as exc:
        why = str(exc.cause) if isinstance(exc.cause, PatternError) else exc.message
        raise ValueError(f"The args_schema of {owner} is not a valid JSON Schema: {why}") from None
    return _Validator(schema)


def schema_problems(validator: Draft202012Validator, instance: Any) -> list[tuple[str, str]]:
    """Every way `instance` fails the schema, as `(path, message)` pairs in a stable order.

    `path` is dotted (`"items.0.name"`), empty for the instance itself.
    """
    problems = [
        (".".join(str(p) for p in error.absolute_path), error.message)
        for error in validator.iter_errors(instance)
    ]
    return sorted(problems)


__all__ = [
    "EMPTY_OBJECT_SCHEMA",
    "RUNTIME_PARAMETER",
    "check_schema",
    "function_schema",
    "schema_problems",
    "type_schema",
]
