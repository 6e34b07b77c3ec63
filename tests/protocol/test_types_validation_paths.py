"""What the generated types accept, reject and keep.

* A value of the wrong type is refused with a msgspec.ValidationError whose
  message names the path to it, through lists, tagged unions, untagged unions
  and open objects.
* Optional fields that are not set are absent on the wire (never ``null``);
  required fields are required.
* Open objects keep every key on a round trip.
* Untagged unions decode to the variant the instance is.
"""

from __future__ import annotations

import json
from typing import Any

import msgspec
import pytest
from conftest import package

from mcpbind.codec import UNSET, OpenObject, convert, decode, encode

V2024 = package("2024-11-05")
V2025 = package("2025-11-25")
V2026 = package("2026-07-28")


def _round_trip(type_: Any, data: Any) -> Any:
    decoded = decode(json.dumps(data), type_)
    assert json.loads(encode(decoded)) == data
    return decoded


# ------------------------------------------------------------------ error paths

TEXT = {"type": "text", "text": "ok"}

WRONG_TYPES = [
    # (revision, type, instance, path of the wrong value)
    (
        "2025-11-25",
        "CallToolResult",
        {"content": [{"type": "text", "text": 1}]},
        "$.content[0].text",
    ),
    (
        "2024-11-05",
        "CallToolResult",
        {"content": [{"type": "text", "text": 1}]},
        "$.content[0].text",
    ),
    (
        "2025-11-25",
        "CallToolResult",
        {"content": [TEXT, {"type": "image", "data": "", "mimeType": 2}]},
        "$.content[1].mimeType",
    ),
    ("2025-11-25", "CallToolResult", {"content": [], "isError": "yes"}, "$.isError"),
    # untagged union inside a tagged union: EmbeddedResource.resource
    (
        "2025-11-25",
        "CallToolResult",
        {"content": [{"type": "resource", "resource": {"uri": "u", "text": 5}}]},
        "$.content[0].resource.text",
    ),
    (
        "2025-11-25",
        "CallToolResult",
        {"content": [{"type": "resource", "resource": {"uri": "u", "blob": 5}}]},
        "$.content[0].resource.blob",
    ),
    (
        "2025-11-25",
        "ReadResourceResult",
        {"contents": [{"uri": "a", "text": "t"}, {"uri": "b", "blob": 1}]},
        "$.contents[1].blob",
    ),
    # open objects: a tool's inputSchema, a result's structuredContent, call arguments, _meta
    (
        "2025-11-25",
        "ListToolsResult",
        {"tools": [{"name": "t", "inputSchema": {"type": "object", "properties": 5}}]},
        "$.tools[0].inputSchema.properties",
    ),
    (
        "2025-11-25",
        "ListToolsResult",
        {"tools": [{"name": "t", "inputSchema": {"type": "array"}}]},
        "$.tools[0].inputSchema.type",
    ),
    (
        "2025-11-25",
        "CallToolResult",
        {"content": [], "structuredContent": 3},
        "$.structuredContent",
    ),
    (
        "2025-11-25",
        "CallToolRequest",
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "x", "arguments": [1]},
        },
        "$.params.arguments",
    ),
    (
        "2025-11-25",
        "CallToolRequest",
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "x", "_meta": {"progressToken": 1.5}},
        },
        "$.params._meta.progressToken",
    ),
    # nested lists and tagged unions
    (
        "2025-11-25",
        "CreateMessageRequest",
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "sampling/createMessage",
            "params": {
                "maxTokens": 1,
                "messages": [
                    {"role": "user", "content": TEXT},
                    {"role": "user", "content": [TEXT, {"type": "text", "text": None}]},
                ],
            },
        },
        "$.params.messages[1].content[1].text",
    ),
    # an untagged union (PrimitiveSchemaDefinition) as the value of a dict
    (
        "2025-11-25",
        "ElicitRequest",
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "elicitation/create",
            "params": {
                "mode": "form",
                "message": "m",
                "requestedSchema": {
                    "type": "object",
                    "properties": {"a": {"type": "number", "minimum": "x"}},
                },
            },
        },
        "$.params.requestedSchema.properties[...].minimum",
    ),
    # the untagged JSON-RPC message union
    (
        "2025-11-25",
        "JSONRPCMessage",
        {"jsonrpc": "2.0", "id": 1, "method": "ping", "params": 5},
        "$.params",
    ),
    # 2026-07-28: the open _meta of a request, inside a request
    (
        "2026-07-28",
        "CallToolRequest",
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {
                "name": "x",
                "_meta": {
                    "io.modelcontextprotocol/protocolVersion": 7,
                    "io.modelcontextprotocol/clientCapabilities": {},
                },
            },
        },
        "$.params._meta.io.modelcontextprotocol/protocolVersion",
    ),
]


@pytest.mark.parametrize(
    ("revision", "name", "instance", "path"),
    [pytest.param(*case, id=f"{case[0]}/{case[1]}:{case[3]}") for case in WRONG_TYPES],
)
def test_wrong_type_names_the_path(revision: str, name: str, instance: Any, path: str) -> None:
    type_ = getattr(package(revision), name)
    with pytest.raises(msgspec.ValidationError) as decoding:
        decode(json.dumps(instance), type_)
    assert str(decoding.value).endswith(f" - at `{path}`"), str(decoding.value)
    with pytest.raises(msgspec.ValidationError) as converting:
        convert(instance, type_)
    assert str(converting.value).endswith(f" - at `{path}`"), str(converting.value)


# ------------------------------------------------------------------ optional and required fields


def test_unset_optional_fields_are_absent() -> None:
    assert json.loads(encode(V2025.CallToolResult(content=[]))) == {"content": []}
    assert json.loads(encode(V2024.CallToolResult(content=[]))) == {"content": []}
    assert json.loads(encode(V2026.CallToolResult(content=[], result_type="complete"))) == {
        "content": [],
        "resultType": "complete",
    }
    assert json.loads(encode(V2025.TextContent(text="hi"))) == {"type": "text", "text": "hi"}
    assert json.loads(encode(V2025.Tool(name="t", input_schema=V2025.ToolInputSchema()))) == {
        "name": "t",
        "inputSchema": {"type": "object"},
    }
    assert json.loads(encode(V2025.Result())) == {}
    assert json.loads(encode(V2025.RequestParamsMeta(progress_token=UNSET))) == {}
    assert b"null" not in encode(V2025.CallToolRequestParams(name="x"))


def test_absent_optional_fields_decode_to_unset() -> None:
    result = decode(b'{"content": []}', V2025.CallToolResult)
    assert result.is_error is UNSET and result.structured_content is UNSET and result.meta is UNSET
    assert decode(b"{}", V2025.Result).meta is UNSET


def test_null_is_not_an_absent_optional_field() -> None:
    with pytest.raises(msgspec.ValidationError, match=r"at `\$\.isError`"):
        decode(b'{"content": [], "isError": null}', V2025.CallToolResult)


@pytest.mark.parametrize(
    ("revision", "name", "instance", "message"),
    [
        ("2025-11-25", "CallToolResult", {}, "Object missing required field `content`"),
        (
            "2025-11-25",
            "CallToolResult",
            {"content": [{"type": "text"}]},
            "Object missing required field `text` - at `$.content[0]`",
        ),
        ("2025-11-25", "Tool", {"name": "t"}, "Object missing required field `inputSchema`"),
        (
            "2025-11-25",
            "CallToolRequest",
            {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {}},
            "Object missing required field `name` - at `$.params`",
        ),
        ("2025-11-25", "ReadResourceResult", {"contents": [{"text": "t"}]}, "at `$.contents[0]`"),
        (
            "2026-07-28",
            "CallToolResult",
            {"resultType": "complete"},
            "Object missing required field `content`",
        ),
        (
            "2026-07-28",
            "ListToolsResult",
            {"ttlMs": 0, "cacheScope": "private"},
            "Object missing required field `tools`",
        ),
    ],
)
def test_required_fields_are_required(
    revision: str, name: str, instance: Any, message: str
) -> None:
    with pytest.raises(msgspec.ValidationError) as error:
        decode(json.dumps(instance), getattr(package(revision), name))
    assert message in str(error.value)


def test_a_missing_result_type_means_complete() -> None:
    """2026-07-28: results of earlier servers have no resultType; they count as complete."""
    assert decode(b'{"content": []}', V2026.CallToolResult).result_type == "complete"
    assert decode(b"{}", V2026.Result).result_type == "complete"
    assert decode(b"{}", V2026.InputRequiredResult).result_type == "input_required"
    assert json.loads(encode(V2026.CallToolResult(content=[]))) == {
        "content": [],
        "resultType": "complete",
    }


def test_a_result_union_follows_result_type() -> None:
    """tools/call's result is InputRequiredResult | CallToolResult: resultType decides."""
    union = V2026.CallToolResultResponseResult
    complete = decode(b'{"content": [], "resultType": "complete"}', union)
    assert isinstance(complete, V2026.CallToolResult)
    asked = decode(
        b'{"resultType": "input_required", "inputRequests": {}, "requestState": "s"}', union
    )
    assert isinstance(asked, V2026.InputRequiredResult) and asked.request_state == "s"
    # Without resultType (an earlier server): complete.
    assert isinstance(decode(b'{"content": []}', union), V2026.CallToolResult)
    # Nested in a response, the same.
    response = decode(
        b'{"jsonrpc": "2.0", "id": 1, "result": {"resultType": "input_required"}}',
        V2026.CallToolResultResponse,
    )
    assert isinstance(response.result, V2026.InputRequiredResult)


READ = b'"contents": [{"uri": "a://b", "text": "x"}]'


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            b'{"resultType": "complete", "ttlMs": 5}',
            "ReadResourceResult lacks required field `contents` (resultType 'complete')",
        ),
        (
            b"{}",
            "ReadResourceResult lacks required field `contents` (resultType absent, so 'complete')",
        ),
        (
            b'{"resultType": "bogus", "cacheScope": "public", ' + READ + b"}",
            "Unrecognized `resultType` 'bogus': expected one of 'input_required', 'complete'"
            " (absent means 'complete')",
        ),
        (
            b'{"resultType": null, "cacheScope": "public", ' + READ + b"}",
            "Unrecognized `resultType` None: expected one of 'input_required', 'complete'"
            " (absent means 'complete')",
        ),
    ],
)
def test_a_final_result_is_never_read_as_another_arm(body: bytes, message: str) -> None:
    """basic/index, ResultType: "A `resultType` of any value unrecognized by
    the client MUST be considered invalid", and "clients MUST treat an absent
    `resultType` as "complete"": a final result lacking what it requires is
    refused naming what it lacks, never taken for an InputRequiredResult."""
    with pytest.raises(msgspec.ValidationError) as error:
        decode(body, V2026.ReadResourceResultResponseResult)
    assert str(error.value) == message


def test_a_missing_ttl_is_the_default_the_specification_gives() -> None:
    """server/utilities/caching: "If `ttlMs` is absent, clients SHOULD assume
    a default of `0` (immediately stale)"; re-encoded, the result says so."""
    body = b'{"resultType": "complete", "cacheScope": "public", ' + READ + b"}"
    result = decode(body, V2026.ReadResourceResultResponseResult)
    assert isinstance(result, V2026.ReadResourceResult) and result.ttl_ms == 0
    assert json.loads(encode(result))["ttlMs"] == 0


CACHEABLE = {
    "DiscoverResult": b'"supportedVersions": ["2026-07-28"], "capabilities": {}',
    "ListToolsResult": b'"tools": []',
    "ListPromptsResult": b'"prompts": []',
    "ListResourcesResult": b'"resources": []',
    "ListResourceTemplatesResult": b'"resourceTemplates": []',
    "ReadResourceResult": READ,
}


@pytest.mark.parametrize("name", sorted(CACHEABLE))
def test_missing_cache_hints_are_immediately_stale_and_private(name: str) -> None:
    """A cacheable result without `ttlMs` and `cacheScope` (the official example
    read-resource-result-response.json has neither): `ttlMs` 0, as
    server/utilities/caching says ("If `ttlMs` is absent, clients SHOULD assume
    a default of `0`"), and `cacheScope` "private", the scope that allows no
    shared cache ("Caches MUST NOT be shared across authorization contexts");
    re-encoded, the result carries both."""
    result = decode(b'{"resultType": "complete", ' + CACHEABLE[name] + b"}", getattr(V2026, name))
    assert (result.ttl_ms, result.cache_scope) == (0, "private")
    encoded = json.loads(encode(result))
    assert (encoded["ttlMs"], encoded["cacheScope"]) == (0, "private")


def test_every_result_union_with_input_required_is_discriminated() -> None:
    """The generator makes every union holding InputRequiredResult follow
    resultType, ServerResult (several final arms) included."""
    unions = [
        name
        for name in V2026.__all__
        if "InputRequiredResult" in repr(getattr(V2026, name).__doc__ or "")
        and name.endswith("Result")
        and name != "InputRequiredResult"
    ]
    assert sorted(unions) == [
        "CallToolResultResponseResult",
        "GetPromptResultResponseResult",
        "ReadResourceResultResponseResult",
        "ServerResult",
    ]
    for name in unions:
        assert "told apart by resultType" in str(getattr(V2026, name).__doc__), name
    asked = decode(b'{"resultType": "input_required", "requestState": "s"}', V2026.ServerResult)
    assert isinstance(asked, V2026.InputRequiredResult)
    with pytest.raises(msgspec.ValidationError, match="Unrecognized `resultType` 'task'"):
        decode(b'{"resultType": "task"}', V2026.ServerResult)


def test_required_fields_are_required_in_python() -> None:
    with pytest.raises(TypeError):
        V2025.TextContent()
    with pytest.raises(TypeError):
        V2025.CallToolResult()


# ------------------------------------------------------------------ open objects

OPEN_OBJECTS = [
    (
        "2025-11-25",
        "Result",
        {"_meta": {"a": 1, "b": [1, {"c": None}]}, "custom": {"deep": [1, 2.5, "x"]}, "n": None},
    ),
    ("2025-11-25", "EmptyResult", {"anything": True}),
    ("2024-11-05", "Result", {"_meta": {"x": "y"}, "extra": 1}),
    (
        "2025-11-25",
        "CallToolRequest",
        {
            "jsonrpc": "2.0",
            "id": "r1",
            "method": "tools/call",
            "params": {
                "name": "x",
                "arguments": {"a": 1, "nested": {"list": [1, "two", None, {"three": 3.5}]}},
                "_meta": {"progressToken": 7, "com.example/trace": {"id": "abc"}, "other": [1]},
            },
        },
    ),
    (
        "2025-11-25",
        "Tool",
        {
            "name": "t",
            "inputSchema": {
                "type": "object",
                "properties": {"a": {"type": "string", "pattern": "^x"}},
                "required": ["a"],
                "additionalProperties": False,
                "$defs": {"b": {"type": "integer"}},
                "$schema": "https://json-schema.org/draft/2020-12/schema",
            },
            "outputSchema": {"type": "object", "properties": {}, "x-extension": 1},
            "_meta": {"k": "v"},
        },
    ),
    (
        "2025-11-25",
        "CallToolResult",
        {"content": [TEXT], "structuredContent": {"a": [1, 2], "b": {"c": "d"}}, "_meta": {"m": 1}},
    ),
    (
        "2025-11-25",
        "GetTaskPayloadResult",
        {"_meta": {"io.modelcontextprotocol/related-task": {"taskId": "t"}}, "value": 1},
    ),
    (
        "2026-07-28",
        "CallToolRequest",
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {
                "name": "x",
                "arguments": {"a": {"b": [None, True]}},
                "_meta": {
                    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                    "io.modelcontextprotocol/clientCapabilities": {"extensions": {"e": {"x": [1]}}},
                    "com.example/trace": "abc",
                },
            },
        },
    ),
    (
        "2026-07-28",
        "CallToolResult",
        {
            "content": [],
            "resultType": "complete",
            "structuredContent": [1, {"a": 2}],
            "_meta": {"com.example/x": 1},
        },
    ),
    (
        "2026-07-28",
        "Result",
        {
            "resultType": "complete",
            "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "s", "version": "1"}, "z": 0},
            "other": {},
        },
    ),
]


@pytest.mark.parametrize(
    ("revision", "name", "instance"), [pytest.param(*c, id=f"{c[0]}/{c[1]}") for c in OPEN_OBJECTS]
)
def test_open_objects_keep_every_key(revision: str, name: str, instance: Any) -> None:
    _round_trip(getattr(package(revision), name), instance)


def test_open_object_types_and_accessors() -> None:
    result = _round_trip(V2025.Result, {"_meta": {"a": 1}, "extra": 2})
    assert issubclass(type(result), OpenObject) and issubclass(type(result), dict)
    assert result.meta == {"a": 1} and result["extra"] == 2
    params = decode(
        b'{"name": "x", "_meta": {"progressToken": "p", "k": 1}}', V2025.CallToolRequestParams
    )
    assert isinstance(params.meta, V2025.RequestParamsMeta)
    assert params.meta.progress_token == "p" and params.meta["k"] == 1
    built = V2025.Result(meta={"a": 1}, extra=2)
    assert json.loads(encode(built)) == {"_meta": {"a": 1}, "extra": 2}


# ------------------------------------------------------------------ untagged unions


def test_resource_contents_variants() -> None:
    text = {"uri": "file:///a", "mimeType": "text/plain", "text": "hello"}
    blob = {"uri": "file:///b", "blob": "aGVsbG8="}
    assert isinstance(_round_trip(V2025.EmbeddedResourceResource, text), V2025.TextResourceContents)
    assert isinstance(_round_trip(V2025.EmbeddedResourceResource, blob), V2025.BlobResourceContents)
    embedded = _round_trip(V2025.EmbeddedResource, {"type": "resource", "resource": blob})
    assert isinstance(embedded.resource, V2025.BlobResourceContents)
    read = _round_trip(V2025.ReadResourceResult, {"contents": [text, blob]})
    assert [type(c) for c in read.contents] == [
        V2025.TextResourceContents,
        V2025.BlobResourceContents,
    ]
    read_2024 = _round_trip(V2024.ReadResourceResult, {"contents": [blob, text]})
    assert [type(c) for c in read_2024.contents] == [
        V2024.BlobResourceContents,
        V2024.TextResourceContents,
    ]


def test_result_unions_pick_the_result() -> None:
    assert type(_round_trip(V2025.ServerResult, {"content": []})) is V2025.CallToolResult
    assert type(_round_trip(V2025.ServerResult, {})) is V2025.Result
    assert type(_round_trip(V2025.ServerResult, {"tools": []})) is V2025.ListToolsResult
    assert type(_round_trip(V2025.ServerResult, {"contents": []})) is V2025.ReadResourceResult
    assert type(_round_trip(V2025.ServerResult, {"unknown": 1})) is V2025.Result
    assert type(_round_trip(V2025.ClientResult, {})) is V2025.Result
    assert type(_round_trip(V2025.ClientResult, {"action": "decline"})) is V2025.ElicitResult
    assert (
        type(_round_trip(V2024.ServerResult, {"content": [], "isError": True}))
        is V2024.CallToolResult
    )
    assert (
        type(_round_trip(V2026.ServerResult, {"resultType": "complete", "content": []}))
        is V2026.CallToolResult
    )
    assert type(_round_trip(V2026.ServerResult, {"resultType": "complete"})) is V2026.Result


PRIMITIVE_SCHEMAS = [
    ({"type": "string"}, "StringSchema"),
    ({"type": "string", "format": "email", "minLength": 3, "title": "Mail"}, "StringSchema"),
    ({"type": "number", "minimum": 0.5}, "NumberSchema"),
    ({"type": "integer", "maximum": 10, "default": 3}, "NumberSchema"),
    ({"type": "boolean", "default": True}, "BooleanSchema"),
    ({"type": "string", "enum": ["a", "b"]}, "UntitledSingleSelectEnumSchema"),
    ({"type": "string", "oneOf": [{"const": "a", "title": "A"}]}, "TitledSingleSelectEnumSchema"),
    (
        {"type": "array", "items": {"type": "string", "enum": ["a"]}, "maxItems": 2},
        "UntitledMultiSelectEnumSchema",
    ),
    (
        {"type": "array", "items": {"anyOf": [{"const": "a", "title": "A"}]}},
        "TitledMultiSelectEnumSchema",
    ),
    ({"type": "string", "enum": ["a"], "enumNames": ["A"]}, "LegacyTitledEnumSchema"),
]


@pytest.mark.parametrize(
    ("instance", "expected"), PRIMITIVE_SCHEMAS, ids=[e for _, e in PRIMITIVE_SCHEMAS]
)
def test_primitive_schema_definition_variants(instance: Any, expected: str) -> None:
    decoded = _round_trip(V2025.PrimitiveSchemaDefinition, instance)
    assert type(decoded) is getattr(V2025, expected)
    form = {"type": "object", "properties": {"field": instance}, "required": ["field"]}
    params = _round_trip(
        V2025.ElicitRequestFormParams, {"mode": "form", "message": "m", "requestedSchema": form}
    )
    assert type(params.requested_schema.properties["field"]) is getattr(V2025, expected)


def test_an_instance_of_no_variant_is_refused() -> None:
    with pytest.raises(msgspec.ValidationError, match="Object matches none of"):
        decode(b'{"uri": "u"}', V2025.EmbeddedResourceResource)
    with pytest.raises(
        msgspec.ValidationError, match=r"Expected `object`, got `str` - at `\$\.contents\[0\]`"
    ):
        decode(b'{"contents": ["x"]}', V2025.ReadResourceResult)


def test_json_rpc_batches_2025_03_26() -> None:
    v = package("2025-03-26")
    requests = [
        {"jsonrpc": "2.0", "id": 1, "method": "ping"},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
    ]
    responses = [
        {"jsonrpc": "2.0", "id": 1, "result": {}},
        {"jsonrpc": "2.0", "id": 2, "error": {"code": -1, "message": "m"}},
    ]
    decoded = _round_trip(v.JSONRPCMessage, requests)
    assert [type(m) for m in decoded] == [v.JSONRPCRequest, v.JSONRPCNotification]
    decoded = _round_trip(v.JSONRPCMessage, responses)
    assert [type(m) for m in decoded] == [v.JSONRPCResponse, v.JSONRPCError]
    with pytest.raises(msgspec.ValidationError):
        decode(b"[1]", v.JSONRPCMessage)
