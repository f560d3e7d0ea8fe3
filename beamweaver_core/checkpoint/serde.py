"""Checkpoint serialization: plain JSON plus a small typed envelope for engine types.

`to_jsonable` turns a value into JSON-safe data (validating it on the way) and `dumps` into
JSON text; `loads` / `from_jsonable` turn them back. Non-JSON engine types travel as
`{"__bw__": tag, "v": ...}` with a fixed, closed set of tags: nothing is ever revived by
importing a name found in the data. A user dict that happens to carry the `__bw__` key is
itself stored as a list of pairs (tag `dict`), so data can never pose as an engine object.

Refused, with a `TypeError` naming the state path and showing the value, before anything
is written: values of other types, non-string dict keys, NaN and infinities, integers beyond
64 bits, and strings PostgreSQL cannot store (NUL characters, lone surrogates).

JSON has arrays, not tuples: a tuple is stored as a list and reads back as one, from every
checkpointer. `normalize` gives a value that shape up front, so what a run returns and
what a later read gives are the same.
"""

from __future__ import annotations

import base64
import json
import math
import reprlib
import sys
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

from beamweaver_core.messages import Message, ToolCall, ToolCallEdits
from beamweaver_core.types import NULL_RESUME, Interrupt, Send

TAG = "__bw__"
_MAX_INT = 2**63

# The closed set of engine types with a tag: (type, tag, encode, decode).
_ENGINE_TYPES: tuple[tuple[type, str, Callable[[Any], Any], Callable[[Any], Any]], ...] = (
    (Send, "send", lambda s: {"node": s.node, "arg": s.arg}, lambda v: Send(v["node"], v["arg"])),
    (Interrupt, "interrupt", Interrupt.to_dict, lambda v: Interrupt(**v)),
    (type(NULL_RESUME), "null_resume", lambda _: None, lambda _: NULL_RESUME),
    (Message, "message", Message.to_dict, Message.from_dict),
    (ToolCall, "tool_call", ToolCall.to_dict, ToolCall.from_dict),
    (ToolCallEdits, "tool_call_edits", ToolCallEdits.to_dict, ToolCallEdits.from_dict),
)
_encoders: dict[type, tuple[str, Callable[[Any], Any]]] = {
    cls: (tag, encode) for cls, tag, encode, _ in _ENGINE_TYPES
}
_decoders: dict[str, Callable[[Any], Any]] = {tag: decode for _, tag, _, decode in _ENGINE_TYPES}


def _path_str(path: tuple[str | int, ...]) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "<root>"


_short = reprlib.Repr()
_short.maxstring = 60
_short.maxother = 60


class _Invalid(Exception):
    """Internal: carries the path of an unstorable value up to the public functions, which
    raise it as a plain `TypeError` (callers never see this class)."""

    def __init__(self, path: tuple[str | int, ...], problem: str, value: Any = None) -> None:
        super().__init__(path, problem)
        self.path = path
        self.problem = problem
        self.value = value


def _stored_error(exc: _Invalid) -> TypeError:
    return TypeError(
        f"Cannot store the value at state path {_path_str(exc.path)!r}: {exc.problem}. "
        f"The value: {_short.repr(exc.value)}"
    )


_NUL = (
    "the string contains a NUL character (\\u0000), which PostgreSQL cannot store; "
    "remove or replace it"
)


def _check_str(value: str, path: tuple[str | int, ...]) -> None:
    if value.isascii():
        if "\x00" in value:
            raise _Invalid(path, _NUL, value)
        return
    if "\x00" in value:
        raise _Invalid(path, _NUL, value)
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise _Invalid(
            path,
            f"the string contains a lone surrogate ({value[exc.start]!r} at offset {exc.start}), "
            "which is not valid Unicode; decode your input with errors='replace'",
            value,
        ) from None


def _convert(value: Any, path: tuple[str | int, ...]) -> Any:
    kind = type(value)
    if kind is str:
        _check_str(value, path)
        return value
    if value is None or kind is bool:
        return value
    if kind is int:
        if -_MAX_INT <= value < _MAX_INT:
            return value
        raise _Invalid(path, "the integer does not fit in 64 bits; store it as a string", value)
    if kind is float:
        if not math.isfinite(value):
            raise _Invalid(path, f"{value!r} is not valid JSON; use None or a string", value)
        return value
    if kind is dict:
        out = {}
        for key, item in value.items():
            if type(key) is not str:
                raise _Invalid(
                    (*path, repr(key)),
                    f"dict keys must be str, got {type(key).__name__}; convert the key with str()",
                    key,
                )
            _check_str(key, (*path, key))
            out[key] = _convert(item, (*path, key))
        if TAG in out:
            # As pairs: the decoder works bottom-up, so the tag key must not survive.
            return {TAG: "dict", "v": [[k, v] for k, v in out.items()]}
        return out
    if kind is list or kind is tuple:
        return [_convert(item, (*path, i)) for i, item in enumerate(value)]
    return _convert_other(value, path)


def _convert_other(value: Any, path: tuple[str | int, ...]) -> Any:
    entry = _encoders.get(type(value))
    if entry is not None:
        tag, encode = entry
        return {TAG: tag, "v": _convert(encode(value), (*path, f"<{tag}>"))}
    if isinstance(value, datetime):
        return {TAG: "datetime", "v": value.isoformat()}
    if isinstance(value, bytes | bytearray):
        return {TAG: "bytes", "v": base64.b64encode(bytes(value)).decode("ascii")}
    if isinstance(value, dict):
        return _convert(dict(value), path)
    if isinstance(value, list | tuple):
        return _convert(list(value), path)
    if isinstance(value, str):
        return _convert(str(value), path)
    if isinstance(value, int) and not isinstance(value, bool):
        return _convert(int(value), path)
    if isinstance(value, float):
        return _convert(float(value), path)
    raise _Invalid(
        path,
        f"values of type {type(value).__qualname__} cannot be checkpointed; store plain data "
        "(dict, list, str, int, float, bool, None) or an engine type (Message, ToolCall, Send, "
        "Interrupt, datetime, bytes) instead, e.g. the object's fields as a dict",
        value,
    )


def _too_deep(path: tuple[str | int, ...]) -> TypeError:
    return TypeError(
        f"Cannot store the value at state path {_path_str(path)!r}: it is nested too deeply "
        f"(more levels than Python's recursion limit, {sys.getrecursionlimit()}); flatten it."
    )


def to_jsonable(value: Any, path: tuple[str | int, ...] = ()) -> Any:
    """Validate `value` and return its JSON-safe form (raises `TypeError` with the path)."""
    try:
        return _convert(value, path)
    except _Invalid as exc:
        raise _stored_error(exc) from None
    except RecursionError:
        raise _too_deep(path) from None


def dumps(value: Any, path: tuple[str | int, ...] = ()) -> str:
    """Serialize `value` to compact JSON text."""
    try:
        converted = _convert(value, path)
    except _Invalid as exc:
        raise _stored_error(exc) from None
    except RecursionError:
        raise _too_deep(path) from None
    return json.dumps(converted, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def stored_form(value: Any, path: tuple[str | int, ...] = ()) -> Any:
    """`value` exactly as a checkpointer reads it back (validated on the way)."""
    return from_jsonable(to_jsonable(value, path))


_LEAF_TYPES = frozenset({str, int, float, bool, type(None)})


def normalize(value: Any) -> Any:
    """`value` with every tuple turned into a list, as every checkpointer reads it back
    (JSON has arrays only). Returns `value` itself when it holds no tuple, so plain data
    costs one walk and no copy; engine types (messages, ...) are kept as they are."""
    kind = type(value)
    if kind in _LEAF_TYPES:
        return value
    if kind is list or (kind is not tuple and isinstance(value, list)):
        for i, item in enumerate(value):
            if type(item) in _LEAF_TYPES:
                continue
            new = normalize(item)
            if new is not item:
                return [*value[:i], new, *(normalize(x) for x in value[i + 1 :])]
        return value
    if kind is dict or isinstance(value, dict):
        for key, item in value.items():
            if type(item) in _LEAF_TYPES:
                continue
            new = normalize(item)
            if new is not item:
                return {k: new if k == key else normalize(v) for k, v in value.items()}
        return value
    if isinstance(value, tuple):
        return [normalize(item) for item in value]
    return value


def normalize_writes(update: Mapping[str, Any]) -> list[tuple[str, Any]]:
    """The `(key, value)` pairs of a state update, each value `normalize`d (a scalar, the
    common case, without a call)."""
    try:
        return [(k, v if type(v) in _LEAF_TYPES else normalize(v)) for k, v in update.items()]
    except RecursionError:
        raise _too_deep(()) from None


def _hook(obj: dict[str, Any]) -> Any:
    tag = obj.get(TAG)
    if tag is None:
        return obj
    if tag == "dict":
        return {k: v for k, v in obj["v"]}
    if tag == "datetime":
        return datetime.fromisoformat(obj["v"])
    if tag == "bytes":
        return base64.b64decode(obj["v"])
    decode = _decoders.get(tag)
    if decode is None:
        raise ValueError(
            f"Unknown serialized type tag {tag!r}: the data was not written by BeamWeaver"
        )
    return decode(obj["v"])


def from_jsonable(data: Any) -> Any:
    """Revive JSON-safe data produced by `to_jsonable` (engine types from the fixed set)."""
    if isinstance(data, dict):
        return _hook({k: from_jsonable(v) for k, v in data.items()})
    if isinstance(data, list):
        return [from_jsonable(v) for v in data]
    return data


def loads(text: str | bytes) -> Any:
    """Parse JSON text written by `dumps`."""
    return json.loads(text, object_hook=_hook)


def validate_json_safe(value: Any, what: str) -> None:
    """Raise `TypeError` unless `value` is plain JSON data (no engine types)."""
    try:
        _plain(value, ())
    except _Invalid as exc:
        raise TypeError(
            f"{what} must be JSON-safe data: at {_path_str(exc.path)!r}, {exc.problem}. "
            f"The value there: {_short.repr(exc.value)}"
        ) from None
    except RecursionError:
        raise TypeError(
            f"{what} is nested too deeply to store (more levels than Python's recursion "
            f"limit, {sys.getrecursionlimit()}); flatten it."
        ) from None


def json_safe(value: Any, what: str) -> Any:
    """Validate plain JSON data like `validate_json_safe` and return it as it reads back
    from a checkpointer (tuples as lists)."""
    validate_json_safe(value, what)
    return stored_form(value)


def _plain(value: Any, path: tuple[str | int, ...]) -> None:
    kind = type(value)
    if kind is str:
        _check_str(value, path)
    elif value is None or kind is bool or kind is int:
        return
    elif kind is float:
        _convert(value, path)
    elif isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                raise _Invalid(
                    (*path, repr(key)),
                    f"dict keys must be str, got {type(key).__name__}; convert the key with str()",
                    key,
                )
            _plain(item, (*path, key))
    elif isinstance(value, list | tuple):
        for i, item in enumerate(value):
            _plain(item, (*path, i))
    else:
        raise _Invalid(
            path,
            f"got a value of type {type(value).__qualname__} (allowed: dict, list, str, int, "
            "float, bool, None); pass its fields as a dict or its text as a str",
            value,
        )


__all__ = [
    "dumps",
    "from_jsonable",
    "json_safe",
    "loads",
    "normalize",
    "normalize_writes",
    "stored_form",
    "to_jsonable",
    "validate_json_safe",
]
