"""Checking tool arguments against a JSON Schema that may come from outside.

A tool's schema may come from an MCP server (its `inputSchema`) or a review payload, and the
arguments from a model or a reviewer's edit, so neither is trusted. The validator is
jsonschema's Draft 2020-12 with these changes:

- Every match of a schema's pattern against instance data runs on RE2
  (`beamweaver_core.patterns`), in time linear in the text: `pattern`,
  `patternProperties`, and the names `additionalProperties` and `unevaluatedProperties`
  weigh against `patternProperties` (jsonschema's own keywords use the backtracking `re`,
  on which `^(a+)+$` against 40 `a`s and a `!` takes days). `propertyNames` and
  `dependentSchemas` apply subschemas, so they reach these keywords; `format` is not
  asserted on arguments.
- One dialect: a `$schema` inside the schema does not switch to another draft's validator
  (whose keywords would run on `re` again).
- References are followed only inside the schema: jsonschema would fetch any other
  `$ref` URL from this server (with no timeout); here it is a problem of the arguments.
- At most `MAX_STEPS` subschemas are applied per check: `allOf` over `$ref`s to shared
  definitions can double the work at each level.

A schema with a pattern RE2 cannot run (look-ahead, look-behind, backreferences) is refused
when the tool is checked, saying which pattern and why.
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterator, Mapping
from typing import Any, cast

import attrs
import referencing
import referencing.exceptions
from jsonschema import Draft202012Validator, FormatChecker, validators
from jsonschema.exceptions import SchemaError, ValidationError

from beamweaver_core.patterns import PatternError, compile_pattern

MAX_STEPS = 100_000
"""The most subschema applications one check of arguments may take."""


class _TooCostly(Exception):
    """The check has used up its `MAX_STEPS`."""


_steps_left: contextvars.ContextVar[list[int]] = contextvars.ContextVar("schema_steps_left")


def _matches(pattern: str, text: str) -> bool:
    return compile_pattern(pattern).search(text) is not None


def _pattern(validator: Any, pattern: str, instance: Any, schema: Any) -> Iterator[ValidationError]:
    if validator.is_type(instance, "string") and not _matches(pattern, instance):
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


def _pattern_properties(
    validator: Any, patterns: Any, instance: Any, schema: Any
) -> Iterator[ValidationError]:
    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in patterns.items():
        for key, value in instance.items():
            if _matches(pattern, key):
                yield from validator.descend(value, subschema, path=key, schema_path=pattern)


_ADDITIONAL = Draft202012Validator.VALIDATORS["additionalProperties"]


def _additional_properties(
    validator: Any, additional: Any, instance: Any, schema: Any
) -> Iterator[ValidationError]:
    # jsonschema's own keyword matches the names against `patternProperties` with `re`.
    if "patternProperties" not in schema or not validator.is_type(instance, "object"):
        yield from _ADDITIONAL(validator, additional, instance, schema)
        return
    known = schema.get("properties", {})
    patterns = list(schema["patternProperties"])
    extras = sorted(
        k for k in instance if k not in known and not any(_matches(p, k) for p in patterns)
    )
    if validator.is_type(additional, "object"):
        for extra in extras:
            yield from validator.descend(instance[extra], additional, path=extra)
    elif additional is False and extras:
        names = ", ".join(repr(e) for e in extras)
        verb = "does" if len(extras) == 1 else "do"
        listed = ", ".join(repr(p) for p in sorted(patterns))
        yield ValidationError(f"{names} {verb} not match any of the regexes: {listed}")


def _is_valid(errors: Iterator[ValidationError]) -> bool:
    return next(errors, None) is None


def _evaluated_keys(validator: Any, instance: Mapping[str, Any], schema: Any) -> set[str]:
    """The keys of `instance` that `schema` and the subschemas it applies in place evaluate
    (what `unevaluatedProperties` leaves out): the same keys as jsonschema's own helper
    finds, with `patternProperties` matched on RE2."""
    if not isinstance(schema, Mapping):
        return set()
    keys: set[str] = set()
    for keyword in ("$ref", "$dynamicRef"):
        if isinstance(schema.get(keyword), str):
            resolved = validator._resolver.lookup(schema[keyword])
            inner = validator.evolve(schema=resolved.contents, _resolver=resolved.resolver)
            keys |= _evaluated_keys(inner, instance, resolved.contents)
    if validator.is_type(schema.get("properties"), "object"):
        keys |= schema["properties"].keys() & instance.keys()
    for keyword in ("additionalProperties", "unevaluatedProperties"):
        if keyword in schema:
            keys |= {
                k for k, v in instance.items() if _is_valid(validator.descend(v, schema[keyword]))
            }
    for pattern in schema.get("patternProperties", {}):
        keys |= {k for k in instance if _matches(pattern, k)}
    for name, subschema in schema.get("dependentSchemas", {}).items():
        if name in instance:
            keys |= _evaluated_keys(validator, instance, subschema)
    for keyword in ("allOf", "oneOf", "anyOf"):
        for subschema in schema.get(keyword, []):
            if _is_valid(validator.descend(instance, subschema)):
                keys |= _evaluated_keys(validator, instance, subschema)
    if "if" in schema:
        if validator.evolve(schema=schema["if"]).is_valid(instance):
            keys |= _evaluated_keys(validator, instance, schema["if"])
            keys |= _evaluated_keys(validator, instance, schema.get("then", True))
        else:
            keys |= _evaluated_keys(validator, instance, schema.get("else", True))
    return keys


def _unevaluated_properties(
    validator: Any, unevaluated: Any, instance: Any, schema: Any
) -> Iterator[ValidationError]:
    # jsonschema's own keyword finds the evaluated keys matching `patternProperties` with `re`.
    if not validator.is_type(instance, "object"):
        return
    evaluated = _evaluated_keys(validator, instance, schema)
    refused = [
        k
        for k in instance
        if k not in evaluated
        and not _is_valid(validator.descend(instance[k], unevaluated, path=k, schema_path=k))
    ]
    if not refused:
        return
    names = ", ".join(repr(k) for k in (sorted(refused) if unevaluated is False else refused))
    verb = "was" if len(refused) == 1 else "were"
    if unevaluated is False:
        yield ValidationError(f"Unevaluated properties are not allowed ({names} {verb} unexpected)")
    else:
        yield ValidationError(
            "Unevaluated properties are not valid under the given schema "
            f"({names} {verb} unevaluated and invalid)"
        )


_Validator: type[Draft202012Validator] = validators.extend(  # type: ignore[no-untyped-call]
    Draft202012Validator,
    validators={
        "pattern": _pattern,
        "patternProperties": _pattern_properties,
        "additionalProperties": _additional_properties,
        "unevaluatedProperties": _unevaluated_properties,
    },
)

_INIT_FIELDS = [(f.name, f.alias) for f in attrs.fields(cast(Any, _Validator)) if f.init]


def _evolve(self: Any, **changes: Any) -> Any:
    # jsonschema's `evolve` (called for every subschema it applies) switches to the stock
    # validator of whatever draft a subschema's `$schema` names, whose keywords use `re`:
    # this one stays on `_Validator`, and counts the step.
    steps = _steps_left.get(None)
    if steps is not None:
        steps[0] -= 1
        if steps[0] < 0:
            raise _TooCostly
    changes.setdefault("schema", self.schema)
    for name, alias in _INIT_FIELDS:
        changes.setdefault(alias, getattr(self, name))
    return _Validator(**changes)


_Validator.evolve = _evolve  # type: ignore[method-assign]

# Only the meta-schemas of the drafts resolve without the schema itself; any other URL is
# `NoSuchResource` instead of a request from this server.
_LOCAL_ONLY: referencing.Registry[Any] = referencing.Registry()

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
    return _Validator(schema, registry=_LOCAL_ONLY)


def schema_problems(validator: Draft202012Validator, instance: Any) -> list[tuple[str, str]]:
    """Every way `instance` fails the schema, as `(path, message)` pairs in a stable order.

    `path` is dotted (`"items.0.name"`), empty for the instance itself. A schema that cannot
    be checked within bounds (a `$ref` outside it, a reference loop, more than `MAX_STEPS`
    subschemas to apply) is one problem at the top level that says so.
    """
    token = _steps_left.set([MAX_STEPS])
    try:
        problems = [
            (".".join(str(p) for p in error.absolute_path), error.message)
            for error in validator.iter_errors(instance)
        ]
    except referencing.exceptions.Unresolvable as exc:
        ref = getattr(exc, "ref", "")
        return [
            (
                "",
                f"the schema's reference {ref!r} cannot be checked: only references "
                "inside the schema are followed",
            )
        ]
    except RecursionError:
        return [("", "the schema refers to itself too deeply to check these arguments")]
    except _TooCostly:
        return [("", f"checking these arguments would apply more than {MAX_STEPS} subschemas")]
    finally:
        _steps_left.reset(token)
    return sorted(problems)


__all__ = ["MAX_STEPS", "check_schema", "schema_problems"]
