"""The generated method tables list exactly the methods of each revision's schema.

The expected methods are read from the schema itself: the ``method`` const of
every arm of ClientRequest, ServerRequest, ClientNotification and
ServerNotification (a revision may define one of these as a single message,
or not at all).
"""

from __future__ import annotations

import typing
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

import pytest
from conftest import REPO, STABLE_REVISIONS, definitions, load_schema, package

from mcpbind.codec import UnsetType
from mcpbind.methods import MethodSpec
from mcpbind_codegen.methods import RUNTIME_OWNED

UNIONS = (
    ("ClientRequest", "client_to_server", "request"),
    ("ServerRequest", "server_to_client", "request"),
    ("ClientNotification", "client_to_server", "notification"),
    ("ServerNotification", "server_to_client", "notification"),
)


@dataclass
class Expected:
    kinds: set[str] = field(default_factory=set)
    directions: set[str] = field(default_factory=set)
    messages: list[str] = field(default_factory=list)

    @property
    def direction(self) -> str:
        return "both" if len(self.directions) > 1 else next(iter(self.directions))


def expected_methods(revision: str) -> dict[str, Expected]:
    defs = definitions(load_schema(revision))
    found: dict[str, Expected] = {}
    for union, direction, kind in UNIONS:
        node = defs.get(union)
        if node is None:
            continue
        arms = (
            [arm["$ref"].rsplit("/", 1)[-1] for arm in node["anyOf"]]
            if "anyOf" in node
            else [union]
        )
        for arm in arms:
            method = defs[arm]["properties"]["method"]["const"]
            entry = found.setdefault(method, Expected())
            entry.kinds.add(kind)
            entry.directions.add(direction)
            entry.messages.append(arm)
    return found


def _methods(revision: str) -> ModuleType:
    methods: ModuleType = package(revision).methods
    return methods


def _cases() -> list[Any]:
    return [
        pytest.param(revision, method, id=f"{revision}/{method}")
        for revision in STABLE_REVISIONS
        for method in sorted(expected_methods(revision))
    ]


def test_2026_07_28_shapes() -> None:
    """The shapes this test has to cope with are still there."""
    defs = definitions(load_schema("2026-07-28"))
    assert "anyOf" not in defs["ClientNotification"]
    assert "ServerRequest" not in defs
    assert "anyOf" in definitions(load_schema("2025-11-25"))["ServerRequest"]


@pytest.mark.parametrize("revision", STABLE_REVISIONS)
def test_methods_are_the_schema_methods(revision: str) -> None:
    methods = _methods(revision)
    assert set(methods.METHODS) == set(expected_methods(revision))
    for name, spec in methods.METHODS.items():
        assert isinstance(spec, MethodSpec)
        assert spec.method == name


def _field_type(message: type, name: str) -> Any:
    """The runtime type of a message's field, without the UnsetType of an optional one."""
    hint = typing.get_type_hints(message)[name]
    args = (
        [a for a in typing.get_args(hint) if a is not UnsetType]
        if typing.get_origin(hint) is not None
        else []
    )
    if UnsetType in typing.get_args(hint):
        return args[0] if len(args) == 1 else typing.Union[tuple(args)]
    return hint


def _is_generated(value: Any, revision: str) -> bool:
    return getattr(value, "__module__", None) == f"{package(revision).__name__}.types"


@pytest.mark.parametrize(("revision", "method"), _cases())
def test_method_spec(revision: str, method: str) -> None:
    pkg = package(revision)
    defs = definitions(load_schema(revision))
    expected = expected_methods(revision)[method]
    spec = pkg.methods.METHODS[method]
    assert len(expected.kinds) == 1
    assert spec.kind == next(iter(expected.kinds))
    assert spec.direction == expected.direction

    message_name = expected.messages[0]
    message_schema = defs[message_name]
    message = getattr(pkg, message_name)
    if "params" in message_schema["properties"]:
        assert spec.params is _field_type(message, "params")
        assert _is_generated(spec.params, revision), spec.params
        for other in expected.messages[1:]:
            assert _field_type(getattr(pkg, other), "params") is spec.params
    else:
        assert spec.params is None
    assert spec.params_required == ("params" in message_schema.get("required", ()))

    if spec.kind == "notification":
        assert spec.result is None
        assert spec.handler.startswith("on_")
        return
    stem = message_name.removesuffix("Request")
    if f"{stem}ResultResponse" in defs:
        assert spec.result is _field_type(getattr(pkg, f"{stem}ResultResponse"), "result")
    elif f"{stem}Result" in defs:
        assert spec.result is getattr(pkg, f"{stem}Result")
    else:
        assert spec.result is pkg.EmptyResult
    assert _is_generated(spec.result, revision), spec.result


@pytest.mark.parametrize("revision", STABLE_REVISIONS)
def test_tables_are_consistent(revision: str) -> None:
    methods = _methods(revision)
    specs = methods.METHODS.values()

    def table(direction: str, kind: str) -> dict[str, MethodSpec[Any, Any]]:
        return {s.method: s for s in specs if s.kind == kind and s.direction in (direction, "both")}

    assert methods.CLIENT_REQUESTS == table("client_to_server", "request")
    assert methods.SERVER_REQUESTS == table("server_to_client", "request")
    assert methods.CLIENT_NOTIFICATIONS == table("client_to_server", "notification")
    assert methods.SERVER_NOTIFICATIONS == table("server_to_client", "notification")
    for name, table_ in [
        ("CLIENT_REQUESTS", methods.CLIENT_REQUESTS),
        ("SERVER_REQUESTS", methods.SERVER_REQUESTS),
        ("CLIENT_NOTIFICATIONS", methods.CLIENT_NOTIFICATIONS),
        ("SERVER_NOTIFICATIONS", methods.SERVER_NOTIFICATIONS),
    ]:
        assert all(methods.METHODS[m] is spec for m, spec in table_.items()), name
    # Every method is in one table at least, and each constant is in METHODS.
    tabled = {
        **methods.CLIENT_REQUESTS,
        **methods.SERVER_REQUESTS,
        **methods.CLIENT_NOTIFICATIONS,
        **methods.SERVER_NOTIFICATIONS,
    }
    assert set(tabled) == set(methods.METHODS)
    # The task variants of a method (TOOLS_CALL_AS_TASK, TOOLS_CALL_TASK_RESULT) are for stubs, not tables.
    constants = [
        value
        for name, value in vars(methods).items()
        if isinstance(value, MethodSpec) and not name.endswith(("_AS_TASK", "_TASK_RESULT"))
    ]
    inputs = getattr(methods, "INPUT_REQUESTS", {})
    assert not set(inputs) & set(methods.METHODS)
    assert sorted(id(c) for c in constants) == sorted(id(s) for s in [*specs, *inputs.values()])


@pytest.mark.parametrize("revision", STABLE_REVISIONS)
def test_input_requests_are_the_input_request_union(revision: str) -> None:
    """2026-07-28 on: what a server may ask for inside an input-required result."""
    pkg = package(revision)
    schema = load_schema(revision)
    defs = schema.get("$defs") or schema["definitions"]
    if "InputRequest" not in defs:
        assert not hasattr(pkg.methods, "INPUT_REQUESTS")
        return
    expected = {
        defs[ref["$ref"].rsplit("/", 1)[1]]["properties"]["method"]["const"]
        for ref in defs["InputRequest"]["anyOf"]
    }
    table = pkg.methods.INPUT_REQUESTS
    assert set(table) == expected
    for spec in table.values():
        assert spec.direction == "server_to_client" and spec.kind == "request"
        assert callable(getattr(pkg.ClientHandlers, spec.handler))
        assert not hasattr(pkg.ServerStub, spec.handler)


@pytest.mark.parametrize("revision", STABLE_REVISIONS)
def test_input_required_methods_are_those_whose_result_may_be_input_required(
    revision: str,
) -> None:
    """2026-07-28 on: a request may be answered with an InputRequiredResult exactly
    when its ``XResultResponse.result`` in the schema has that arm; the server
    reads the table instead of a list of its own. Older revisions have no table."""
    pkg = package(revision)
    defs = definitions(load_schema(revision))
    expected = set()
    for name, node in defs.items():
        if not name.endswith("ResultResponse"):
            continue
        arms = node.get("properties", {}).get("result", {}).get("anyOf", [])
        if {"$ref": "#/$defs/InputRequiredResult"} in arms:
            request = defs[name.removesuffix("ResultResponse") + "Request"]
            expected.add(request["properties"]["method"]["const"])
    table = getattr(pkg.methods, "INPUT_REQUIRED_METHODS", None)
    if not expected:
        assert table is None
        return
    assert table is not None and set(table) == expected
    assert all(pkg.methods.CLIENT_REQUESTS[m] is spec for m, spec in table.items())


@pytest.mark.parametrize("revision", STABLE_REVISIONS)
def test_handlers_and_stubs_follow_the_tables(revision: str) -> None:
    pkg = package(revision)
    methods = pkg.methods
    for receiver, requests, notifications in [
        (pkg.ServerHandlers, methods.CLIENT_REQUESTS, methods.CLIENT_NOTIFICATIONS),
        (pkg.ClientHandlers, methods.SERVER_REQUESTS, methods.SERVER_NOTIFICATIONS),
    ]:
        received = [
            s
            for s in (*requests.values(), *notifications.values())
            if s.method not in RUNTIME_OWNED
        ]
        names = [s.handler for s in received]
        assert len(names) == len(set(names)), names
        for spec in received:
            assert callable(getattr(receiver, spec.handler)), (receiver.__name__, spec.method)
    for stub, requests in [
        (pkg.ClientStub, methods.CLIENT_REQUESTS),
        (pkg.ServerStub, methods.SERVER_REQUESTS),
    ]:
        for spec in requests.values():
            if spec.method not in RUNTIME_OWNED or spec.method == "ping":
                assert callable(getattr(stub, spec.handler)), (stub.__name__, spec.method)


@pytest.mark.parametrize("revision", STABLE_REVISIONS)
def test_cancelled_is_on_cancelled(revision: str) -> None:
    """Named after its message in every revision, also where the schema's
    ClientNotification is that single message (2026-07-28)."""
    assert _methods(revision).METHODS["notifications/cancelled"].handler == "on_cancelled"


@pytest.mark.parametrize("revision", STABLE_REVISIONS)
def test_capabilities_are_receiver_capabilities(revision: str) -> None:
    defs = definitions(load_schema(revision))
    for spec in _methods(revision).METHODS.values():
        if not spec.capability:
            continue
        receiver = (
            "ServerCapabilities" if spec.direction == "client_to_server" else "ClientCapabilities"
        )
        node = defs[receiver]
        for part in spec.capability:
            assert part in node["properties"], (spec.method, spec.capability)
            node = node["properties"][part]
            if "$ref" in node:
                node = defs[node["$ref"].rsplit("/", 1)[-1]]


@pytest.mark.parametrize("revision", STABLE_REVISIONS)
def test_protocol_facts_are_on_the_generated_specs(revision: str) -> None:
    """Each fact of schema/protocol_facts.toml is on the method's spec of every
    revision that has the method (from its ``since`` on), and only there."""
    import tomllib

    methods = _methods(revision)
    entries = tomllib.loads((REPO / "schema" / "protocol_facts.toml").read_text())["fact"]
    expected: dict[tuple[str, str], Any] = {}
    for entry in entries:
        if entry["method"] in methods.METHODS and entry.get("since", revision) <= revision:
            for key, value in entry.items():
                if key not in ("method", "since", "source"):
                    expected[entry["method"], key] = (
                        tuple(value) if isinstance(value, list) else value
                    )
    for name, spec in methods.METHODS.items():
        for key, default in (
            ("name_field", None),
            ("stales", ()),
            ("sender_capability", ()),
            ("listen_filter", None),
            ("input_errors_as_result", False),
        ):
            assert getattr(spec, key) == expected.get((name, key), default), (name, key)


@pytest.mark.parametrize("revision", STABLE_REVISIONS)
def test_input_request_types_are_their_message_definitions(revision: str) -> None:
    """An input-required result carries each input request as its message type."""
    pkg = package(revision)
    inputs = getattr(pkg.methods, "INPUT_REQUESTS", {})
    types = getattr(pkg.methods, "INPUT_REQUEST_TYPES", {})
    assert set(types) == set(inputs)
    for method, message in types.items():
        assert message.method == method and _is_generated(message, revision)


def test_the_runtime_reads_the_generated_facts() -> None:
    """What the runtime once kept in tables of its own, read from the specs."""
    from mcpbind._core import lifecycle
    from mcpbind._transports.http.headers import MirroredFields

    facts = lifecycle.bindings()
    assert facts.name_fields == {
        "tools/call": "name",
        "prompts/get": "name",
        "resources/read": "uri",
        "tasks/get": "taskId",
        "tasks/update": "taskId",
        "tasks/cancel": "taskId",
    }
    # Mcp-Name is decoded from these members without decoding the whole params.
    assert set(facts.name_fields.values()) <= set(MirroredFields.__struct_fields__)
    assert facts.stales["notifications/resources/list_changed"] == (
        "resources/list",
        "resources/templates/list",
    )
    assert facts.cacheable == {
        "tools/list",
        "prompts/list",
        "resources/list",
        "resources/templates/list",
        "resources/read",
    }
    assert {kind: change.listen_filter for kind, change in facts.list_changes.items()} == {
        "tools": "toolsListChanged",
        "prompts": "promptsListChanged",
        "resources": "resourcesListChanged",
    }
