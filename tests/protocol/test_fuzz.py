"""Property-based fuzzing of every `/lg` operation, driven by the OpenAPI document the live
server serves (`/lg/openapi.json`), and hand-picked hostile bodies through the same checks.

For each documented operation, Hypothesis draws the path parameters (the world's real ids
or arbitrary text), the documented query parameters (valid values or arbitrary text),
sometimes no token, and a body: one the operation's request schema allows (biased to real
graphs, threads, runs and checkpoints, so requests get past the lookups), the same with one
value anywhere in it replaced by arbitrary JSON, or arbitrary JSON. After each request:

- never a 5xx;
- a status the operation documents; an error is `{"detail": "..."}` (`ErrorResponse`);
- a 2xx answer conforms to the documented answer schema (formats checked), a 202/204 is
  empty, an SSE answer is `text/event-stream`;
- a body the document's schema refuses is refused (4xx);
- a refused request (4xx) changed nothing: every thread, checkpoint, run, run event,
  protocol run record, review item, decision, audit event and outbox message is as before.

The server runs without workers (`BEAMWEAVER_WORKER_MODE=external`): the test executes the
runs a request queued itself, between requests, so nothing changes the database while a
request is judged. A long wait or stream is judged by its status and headers.

Why neither schemathesis nor hypothesis-jsonschema: schemathesis 4.32 needs
`jsonschema-rs>=0.60.1,<0.61`, and `langgraph-api` (the differential suite's LangGraph
server, through `langgraph-cli[inmem]`) needs `jsonschema-rs<0.45`, so one `pip install
-e '.[dev]'` cannot hold both; hypothesis-jsonschema 0.23.1 (its latest) fails on any
object schema with the installed Hypothesis 6.170 (`'many' object has no attribute
'more'`). The document's schemas use a small part of JSON Schema (`type`, `properties`,
`required`, `enum`, `anyOf`, `$ref`, `items`, lengths, bounds, `format: uuid`), which
`_drawn` below turns into Hypothesis strategies.

Bounded for CI: a fixed number of examples per operation (`BEAMWEAVER_FUZZ_EXAMPLES`
raises it), derandomized, no example database.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from beamweaver_core.models import (
    Checkpoint,
    CheckpointBlob,
    CheckpointWrite,
    Run,
    RunEvent,
    Thread,
)
from beamweaver_core.protocol.models import ProtocolRun
from beamweaver_core.protocol.openapi import document
from beamweaver_core.runtime.execution import execute
from beamweaver_core.runtime.queue import claim_next_run
from reviews.models import AuditEvent, Decision, OutboxMessage, ReviewItem
from tests.protocol.conftest import api_user, token_for

SERVER_ENV = {"BEAMWEAVER_WORKER_MODE": "external"}

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("protocol_graphs")]

EXAMPLES = int(os.environ.get("BEAMWEAVER_FUZZ_EXAMPLES", "12"))
FUZZ = settings(
    max_examples=EXAMPLES,
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=list(HealthCheck),
)
OPERATIONS = [
    (method.upper(), path)
    for path, operations in document("http://testserver/lg")["paths"].items()
    for method in operations
]
STREAM_SECONDS = 1.0
"""How long a long wait or a stream is given to answer its status."""

GRAPHS = ("linear", "ask", "nested", "parallel", "chat", "configured")

# -- arbitrary JSON -----------------------------------------------------------------

_text = st.text(st.characters(codec="utf-8"), max_size=12)
_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    _text,
)
json_values = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_text, inner, max_size=3),
    max_leaves=8,
)


# -- the world the requests are about --------------------------------------------------


@dataclass
class World:
    """Alice's threads (finished, paused on a question, busy with a running run, new),
    Bob's thread, their runs and checkpoints, and the registered assistants' ids."""

    url: str
    token: str
    ids: dict[str, list[str]] = field(default_factory=dict)
    runs: dict[str, str] = field(default_factory=dict)
    """Each run's thread."""
    node_names: list[str] = field(default_factory=lambda: ["one", "two", "ask", "sub"])

    def client(self) -> httpx.Client:
        return httpx.Client(base_url=self.url, timeout=httpx.Timeout(30, read=STREAM_SECONDS))


def _post(client: httpx.Client, token: str, path: str, body: Any) -> dict[str, Any]:
    response = client.post(path, json=body, headers={"x-api-key": token})
    assert response.status_code == 200, response.text
    return dict(response.json())


def run_queued() -> None:
    """Execute, in this process, every run a worker could claim now."""
    for _ in range(20):
        claim = claim_next_run("fuzz", 30.0)
        if claim is None:
            return
        execute(claim)


@pytest.fixture
def world(lg_url: str) -> Iterator[World]:
    token, bobs = token_for(api_user("alice")), token_for(api_user("bob"))
    found = World(lg_url, token)
    with httpx.Client(base_url=lg_url, timeout=30) as client:
        threads = [_post(client, token, "/threads", {})["thread_id"] for _ in range(4)]
        done, paused, busy, _ = threads
        runs = [
            _post(client, token, f"/threads/{done}/runs", {"assistant_id": "linear", "input": {}}),
            _post(client, token, f"/threads/{paused}/runs", {"assistant_id": "ask", "input": {}}),
        ]
        run_queued()
        runs.append(
            _post(
                client,
                token,
                f"/threads/{busy}/runs",
                {"assistant_id": "linear", "input": {}},
            )
        )
        # Claimed by a worker that never runs it: the thread stays busy.
        assert claim_next_run("fuzz-holder", 3600.0) is not None
        theirs = _post(client, bobs, "/threads", {})["thread_id"]
        history = client.post(f"/threads/{done}/history", json={}, headers={"x-api-key": token})
        assistants = client.post("/assistants/search", json={}, headers={"x-api-key": token})
    found.runs = {run["run_id"]: run["thread_id"] for run in runs}
    found.ids = {
        "thread_id": [*threads, theirs],
        "run_id": [run["run_id"] for run in runs],
        "checkpoint_id": [state["checkpoint"]["checkpoint_id"] for state in history.json()],
        "assistant_id": [*GRAPHS, *(a["assistant_id"] for a in assistants.json())],
        "namespace": ["sub", "inner"],
        "as_node": found.node_names,
    }
    yield found


# -- requests drawn from the document --------------------------------------------------


def _drawn(
    schema: dict[str, Any], components: dict[str, Any], world: World, name: str = ""
) -> st.SearchStrategy[Any]:
    """Values `schema` allows; a property named after one of the world's ids is biased to
    the world's (and may be anything of its type)."""
    if "$ref" in schema:
        return _drawn(components[schema["$ref"].rsplit("/", 1)[1]], components, world, name)
    if "anyOf" in schema:
        return st.one_of([_drawn(option, components, world, name) for option in schema["anyOf"]])
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    kinds = schema.get("type")
    if kinds is None:
        return json_values
    if isinstance(kinds, list):
        return st.one_of(
            [_drawn({**schema, "type": kind}, components, world, name) for kind in kinds]
        )
    if kinds == "object":
        properties = schema.get("properties")
        if not properties:
            return st.dictionaries(_text, json_values, max_size=3)
        required = set(schema.get("required", ()))
        drawn = {key: _drawn(value, components, world, key) for key, value in properties.items()}
        # A few optional fields at a time: with a dozen, some value would almost always be
        # refused by the server's own checks (an unknown node or checkpoint), so a request
        # would seldom get past them.
        optional = sorted(set(drawn) - required)
        some = st.sets(st.sampled_from(optional), max_size=3) if optional else st.just(set())
        return some.flatmap(
            lambda keys: st.fixed_dictionaries({key: drawn[key] for key in sorted(required | keys)})
        )
    if kinds == "array":
        item_name = "run_id" if name == "run_ids" else name
        items = _drawn(schema.get("items", {}), components, world, item_name)
        low = schema.get("minItems", 0)
        return st.lists(items, min_size=low, max_size=min(schema.get("maxItems", 3), low + 3))
    if kinds == "string":
        if schema.get("format") == "uuid":
            return st.one_of(st.uuids().map(str), st.sampled_from(world.ids.get(name, ["x"])))
        low, high = schema.get("minLength", 0), schema.get("maxLength", 40)
        strings = st.text(st.characters(codec="utf-8"), min_size=low, max_size=min(high, 40))
        if name in world.ids:
            known = st.sampled_from(world.ids[name])
            return st.one_of(known, known, known, strings)
        return strings
    if kinds == "integer":
        return st.integers(schema.get("minimum"), schema.get("maximum"))
    if kinds == "number":
        return st.floats(
            schema.get("minimum"), schema.get("maximum"), allow_nan=False, allow_infinity=False
        )
    if kinds == "boolean":
        return st.booleans()
    assert kinds == "null", schema
    return st.none()


def _known_or_any(world: World, name: str) -> st.SearchStrategy[str]:
    arbitrary = st.text(st.characters(codec="utf-8"), min_size=1, max_size=40)
    if name not in world.ids:
        return arbitrary
    known = st.sampled_from(world.ids[name])
    return st.one_of(known, known, st.uuids().map(str), arbitrary)


def _query_value(schema: dict[str, Any]) -> st.SearchStrategy[Any]:
    """A documented query parameter's value as a client writes it, or arbitrary text."""
    arbitrary = st.text(st.characters(codec="utf-8"), max_size=12)
    if "anyOf" in schema:
        return st.one_of([_query_value(option) for option in schema["anyOf"]])
    if "enum" in schema:
        return st.sampled_from(schema["enum"]) | arbitrary
    kind = schema["type"]
    if kind == "array":
        return st.lists(_query_value(schema["items"]), min_size=1, max_size=3)
    if kind == "boolean":
        return st.sampled_from(["true", "false", "1", "0"]) | arbitrary
    if kind == "integer":
        return st.integers(-5, 2000).map(str) | arbitrary
    return arbitrary


def _replaced_somewhere(body: Any, data: st.DataObject) -> Any:
    """`body` with one value anywhere in it (or a key of an object) replaced by arbitrary
    JSON: the wrong type at any level."""
    paths: list[tuple[Any, ...]] = []

    def walk(value: Any, path: tuple[Any, ...]) -> None:
        paths.append(path)
        if isinstance(value, dict):
            for key, inner in value.items():
                walk(inner, (*path, key))
        elif isinstance(value, list):
            for index, inner in enumerate(value):
                walk(inner, (*path, index))

    walk(body, ())
    path = data.draw(st.sampled_from(paths), label="replaced at")
    new = data.draw(json_values, label="replaced with")
    if not path:
        return new
    copy = json.loads(json.dumps(body))
    parent = copy
    for part in path[:-1]:
        parent = parent[part]
    parent[path[-1]] = new
    return copy


@dataclass(frozen=True)
class Request:
    method: str
    url: str
    params: list[tuple[str, str]]
    headers: dict[str, str]
    body: bytes | None
    document_allows: bool
    """Whether the document's request schema allows the body (an operation without one:
    always)."""


def _request(
    data: st.DataObject, world: World, spec: dict[str, Any], method: str, path: str
) -> Request:
    operation = spec["paths"][path][method.lower()]
    components = spec["components"]["schemas"]
    url, params, headers = path, [], {}
    run = data.draw(st.sampled_from(sorted(world.runs)), label="the run")
    coherent = {
        "run_id": run,
        "thread_id": world.runs[run] if "{run_id}" in path else None,
        "checkpoint_id": world.ids["checkpoint_id"][0],
    }
    for parameter in operation["parameters"]:
        name, where = parameter["name"], parameter["in"]
        if where == "path":
            # Mostly ids that go together (a run of its thread), so that requests get past
            # the lookups; else each the world's, a new uuid or arbitrary text.
            value = coherent.get(name)
            if value is None or data.draw(st.integers(0, 3), label=f"{name} apart") == 3:
                value = data.draw(_known_or_any(world, name), label=name)
            # Dots too: a client's URL library would resolve `.` and `..` segments away.
            url = url.replace(f"{{{name}}}", quote(value, safe="").replace(".", "%2E"))
        elif where == "query" and data.draw(st.booleans(), label=f"with {name}"):
            value = data.draw(_query_value(parameter["schema"]), label=name)
            params += [(name, v) for v in (value if isinstance(value, list) else [value])]
        elif where == "header" and data.draw(st.booleans(), label=f"with {name}"):
            printable = st.characters(min_codepoint=33, max_codepoint=126)
            headers[name] = data.draw(st.text(printable, min_size=1), label=name)
    if operation.get("security") != [] and data.draw(st.integers(0, 9), label="no token") < 9:
        headers["x-api-key"] = world.token
    schema_ref = operation.get("requestBody", {}).get("content", {}).get("application/json")
    # Mostly bodies the document allows (the first choice is the one Hypothesis prefers).
    ways = ["valid", "valid", "replaced", "replaced", "arbitrary", "absent"]
    how = data.draw(st.sampled_from(ways), label="how")
    if schema_ref is None:
        body, allowed = data.draw(json_values, label="body"), True
    else:
        valid = data.draw(_drawn(schema_ref["schema"], components, world), label="valid body")
        if how == "absent":
            body = {}  # what the server reads an empty body as
        elif how == "valid":
            # A new thread needs input to start from: without it most runs would be refused.
            properties = components.get(schema_ref["schema"]["$ref"].rsplit("/", 1)[1], {})
            body = {"input": {}, **valid} if "input" in properties.get("properties", {}) else valid
        elif how == "replaced":
            body = _replaced_somewhere(valid, data)
        else:
            body = data.draw(json_values, label="arbitrary body")
        allowed = Draft202012Validator(
            {**schema_ref["schema"], "components": spec["components"]},
            format_checker=Draft202012Validator.FORMAT_CHECKER,
        ).is_valid(body)
    raw = None if how == "absent" else json.dumps(body, ensure_ascii=False).encode("utf-8")
    return Request(method, url, params, headers, raw, allowed)


# -- what must hold of every answer -----------------------------------------------------

LONG = {"wait_run", "wait_stateless_run", "join_run"}
"""Operations that wait for a run to stop: with no worker, a queued run never does."""

WATCHED = (
    Thread,
    Checkpoint,
    CheckpointBlob,
    CheckpointWrite,
    Run,
    RunEvent,
    ProtocolRun,
    ReviewItem,
    Decision,
    AuditEvent,
    OutboxMessage,
)


def snapshot() -> dict[str, list[dict[str, Any]]]:
    """Every row a request to `/lg` may change."""
    return {
        model.__name__: [dict(row) for row in model.objects.order_by("pk").values()]
        for model in WATCHED
    }


def _schema_of(answer: dict[str, Any]) -> dict[str, Any] | None:
    content = answer.get("content", {}).get("application/json")
    return None if content is None else content.get("schema")


def _settled() -> dict[str, Any]:
    """The database once the server has done what a closed stream asked (a cancel on
    disconnect): the same snapshot twice in a row, 0.2 s apart (at most 5 s)."""
    before = snapshot()
    for _ in range(25):
        time.sleep(0.2)
        now = snapshot()
        if now == before:
            return now
        before = now
    raise AssertionError("the database kept changing after a stream was closed")


def check_answer(world: World, spec: dict[str, Any], path: str, request: Request) -> int | None:
    """Send `request` and check its answer against the document (see the module's
    docstring); its status, or `None` for a stream or wait still open when left."""
    try:
        return _answered(world, spec, path, request)
    except Exception as exc:
        exc.add_note(f"{request.method} {request.url} {request.params} {request.body!r:.300}")
        raise


def _answered(world: World, spec: dict[str, Any], path: str, request: Request) -> int | None:
    operation = spec["paths"][path][request.method.lower()]
    before = snapshot()
    headers = {**request.headers}
    if request.body is not None:
        headers["content-type"] = "application/json"
    with world.client() as client:
        try:
            with client.stream(
                request.method,
                request.url,
                params=tuple(request.params),
                headers=headers,
                content=request.body,
            ) as response:
                status, kind = response.status_code, response.headers.get("content-type", "")
                if status == 200 and kind.startswith("text/event-stream"):
                    assert "text/event-stream" in operation["responses"]["200"]["content"]
                    return None
                response.read()
        except httpx.ReadTimeout:
            # Left waiting: a wait for a run no worker executes here. A stream answers at
            # once (a run's with its `metadata`, a thread's with a comment).
            assert operation["operationId"] in LONG, operation["operationId"]
            return None
    assert status < 500, response.content

    assert str(status) in operation["responses"], (status, response.content)
    answer = operation["responses"][str(status)]
    schema = _schema_of(answer)
    if status in (202, 204):
        assert response.content == b""
    else:
        assert schema is not None, answer
        assert kind == "application/json", kind
        validator = Draft202012Validator(
            {**schema, "components": spec["components"]},
            format_checker=Draft202012Validator.FORMAT_CHECKER,
        )
        errors = [e.message for e in validator.iter_errors(response.json())]
        assert not errors, (errors, response.json())
    if status >= 400:
        assert set(response.json()) == {"detail"}, response.json()
        assert snapshot() == before, "a refused request changed the database"
    else:
        assert request.document_allows, f"a body the document refuses was taken ({status})"
    return status


@pytest.fixture
def spec(world: World) -> dict[str, Any]:
    """The document the live server serves."""
    response = httpx.get(f"{world.url}/openapi.json")
    assert response.status_code == 200
    return dict(response.json())


@pytest.mark.parametrize(("method", "path"), OPERATIONS, ids=[f"{m} {p}" for m, p in OPERATIONS])
def test_generated_requests_get_documented_answers_and_refusals_change_nothing(
    world: World, spec: dict[str, Any], method: str, path: str
) -> None:
    @FUZZ
    @given(data=st.data())
    def fuzz(data: st.DataObject) -> None:
        request = _request(data, world, spec, method, path)
        status = check_answer(world, spec, path, request)
        if status is None:
            _settled()
        elif status < 300:
            run_queued()

    fuzz()


# -- hand-picked hostile bodies ---------------------------------------------------------

HOSTILE: dict[str, bytes] = {
    "invalid UTF-8": b'{"metadata": {"a": "\xff\xfe"}, "assistant_id": "linear"}',
    "a lone surrogate": b'{"metadata": {"a": "\\ud800"}, "assistant_id": "linear"}',
    "NUL in a string": b'{"metadata": {"a": "x\\u0000y"}, "assistant_id": "linear"}',
    "NUL in a key": b'{"metadata": {"a\\u0000": 1}, "assistant_id": "linear"}',
    "NUL in values": b'{"values": {"a": "\\u0000"}, "assistant_id": "linear", "input": {"log": ["\\u0000"]}}',
    "deeply nested": b'{"metadata": ' + b"[" * 5000 + b"]" * 5000 + b"}",
    "a huge integer": b'{"limit": 1' + b"0" * 400 + b', "assistant_id": "linear"}',
    "a huge float": b'{"limit": 1e400, "assistant_id": "linear"}',
    "a key twice": b'{"assistant_id": "linear", "assistant_id": "ask"}',
    "not an object": b'["assistant_id", "linear"]',
    "not JSON": b'{"assistant_id": linear}',
    "NaN": b'{"assistant_id": "linear", "after_seconds": NaN}',
}
"""Raw bodies every operation that takes a body must refuse or take without a 5xx."""

MUST_REFUSE = {
    "invalid UTF-8",
    "a lone surrogate",
    "deeply nested",
    "a huge integer",
    "a huge float",
    "a key twice",
    "not JSON",
    "NaN",
}

WRONG: list[Any] = [None, True, 7, 1.5, "text", [], {}, [{}], {"x": {}}]
"""Values of every JSON type, put where the document asks for another."""

RUN_PLACES: list[tuple[str, ...]] = [
    ("command",),
    ("command", "update"),
    ("command", "goto"),
    ("command", "goto", "node"),
    ("config",),
    ("config", "tags"),
    ("config", "recursion_limit"),
    ("config", "configurable"),
    ("context",),
    ("checkpoint",),
    ("checkpoint", "checkpoint_id"),
    ("checkpoint", "checkpoint_ns"),
    ("checkpoint", "checkpoint_map"),
    ("stream_mode",),
    ("interrupt_before",),
    ("input",),
]


def _placed(path: tuple[str, ...], value: Any) -> dict[str, Any]:
    """A run body (for `linear`) with `value` at `path`."""
    body: dict[str, Any] = {"assistant_id": "linear", "input": {"log": []}}
    inner = body
    for part in path[:-1]:
        inner = inner.setdefault(part, {})
    inner[path[-1]] = value
    return body


def _with_ids(world: World, path: str) -> str:
    """`path` about the world's finished thread, its run and its last checkpoint."""
    ids = {
        "thread_id": world.ids["thread_id"][0],
        "run_id": world.ids["run_id"][0],
        "checkpoint_id": world.ids["checkpoint_id"][0],
        "assistant_id": "linear",
    }
    for name, value in ids.items():
        path = path.replace(f"{{{name}}}", value)
    return path


def _takes_a_body(spec: dict[str, Any]) -> list[tuple[str, str]]:
    return [
        (method.upper(), path)
        for path, operations in spec["paths"].items()
        for method, operation in operations.items()
        if "requestBody" in operation
    ]


def _allowed(spec: dict[str, Any], method: str, path: str, raw: bytes) -> bool:
    operation = spec["paths"][path][method.lower()]
    schema = operation["requestBody"]["content"]["application/json"]["schema"]
    try:
        body = json.loads(raw)
    except (ValueError, RecursionError):
        return False
    validator = Draft202012Validator({**schema, "components": spec["components"]})
    return validator.is_valid(body)


def _send_raw(world: World, spec: dict[str, Any], method: str, path: str, raw: bytes) -> int:
    request = Request(
        method,
        _with_ids(world, path),
        [],
        {"x-api-key": world.token},
        raw,
        _allowed(spec, method, path, raw),
    )
    status = check_answer(world, spec, path, request)
    if status is None:
        _settled()
    elif status < 300:
        run_queued()
    return status or 200


def test_hostile_bodies_to_every_operation_that_takes_one(
    world: World, spec: dict[str, Any]
) -> None:
    """Each refused with a 4xx in the protocol's shape, changing nothing, where the body
    is not acceptable JSON; taken or refused, never a 5xx, elsewhere."""
    answers = {
        (name, method, path): _send_raw(world, spec, method, path, raw)
        for name, raw in HOSTILE.items()
        for method, path in _takes_a_body(spec)
    }

    accepted = {key: status for key, status in answers.items() if key[0] in MUST_REFUSE}
    assert all(400 <= status < 500 for status in accepted.values()), accepted


def test_wrong_types_at_every_level_of_a_run_body(world: World, spec: dict[str, Any]) -> None:
    """`command`, `config`, `context`, `checkpoint`, `stream_mode` and kin, each level of
    them given each JSON type: what the document refuses is a 4xx that changes nothing
    (`check_answer`), what it allows is taken or refused, never a 5xx."""
    for place in RUN_PLACES:
        for value in WRONG:
            raw = json.dumps(_placed(place, value)).encode()
            _send_raw(world, spec, "POST", "/threads/{thread_id}/runs", raw)


@pytest.mark.parametrize(
    "stream_mode", ["bogus", ["values", "bogus"], "", ["VALUES"], "messages-tuple "]
)
def test_unknown_stream_modes_are_refused_everywhere_a_run_starts(
    world: World, spec: dict[str, Any], stream_mode: Any
) -> None:
    raw = json.dumps({"assistant_id": "linear", "input": {}, "stream_mode": stream_mode}).encode()
    statuses = [
        _send_raw(world, spec, "POST", path, raw)
        for path in ("/threads/{thread_id}/runs", "/threads/{thread_id}/runs/stream", "/runs/wait")
    ]
    assert statuses == [422, 422, 422]


def test_a_batch_and_a_cancel_the_generator_seldom_gets_taken_are_checked_taken(
    world: World, spec: dict[str, Any]
) -> None:
    """The generator's bodies for `/runs/batch` and `/runs/cancel` are almost never taken
    (a batch item is rarely a runnable body, a drawn cancel seldom names a run it may
    cancel), so their 2xx answers are checked here through the same checks: the
    documented status, the documented (empty) answer, and the batch's runs run."""
    batch = [{"assistant_id": "linear", "input": {"log": []}} for _ in range(2)]
    taken = _send_raw(world, spec, "POST", "/runs/batch", json.dumps(batch).encode())
    assert taken == 200
    busy = world.ids["thread_id"][2]
    running = next(run for run, thread in world.runs.items() if thread == busy)
    cancel = {"thread_id": busy, "run_ids": [running]}
    assert _send_raw(world, spec, "POST", "/runs/cancel", json.dumps(cancel).encode()) == 204
    assert Run.objects.get(pk=running).status == "cancelled"
