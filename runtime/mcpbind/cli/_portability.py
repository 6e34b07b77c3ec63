"""``mcpx list tools --strict``: what common clients reject in a server's tools.

A tool is handed on to a model provider by the client that lists it: its name
becomes a function name, its input schema the function's parameters. Each
rule says which client it stands for and where that limit is written down:

| rule | severity | source |
|---|---|---|
| ``boolean-schema`` | error | MCP Inspector 2.12.0 ``--strict``: a bare ``true``/``false`` where a schema object is expected |
| ``type-union`` | warning | Inspector 2.12.0 ``--strict``: ``type`` as an array; the OpenAPI 3.0 subset of Gemini function declarations has one ``type`` |
| ``remote-ref`` | warning | Inspector 2.12.0 ``--strict``: a ``$ref`` outside the document; clients do not fetch schemas |
| ``untyped-schema`` | warning | Inspector 2.12.0 ``--strict``: a schema with no validation keyword accepts anything |
| ``tool-name`` | error | OpenAI function calling: a function name matches ``^[a-zA-Z0-9_-]{1,64}$``; Gemini / Vertex AI ``FunctionDeclaration.name``: starts with a letter or ``_``, at most 64 characters |
| ``parameters-object`` | error | OpenAI function calling: ``parameters`` is an object schema (``"type": "object"``, not ``anyOf`` at the root); the MCP schema's ``inputSchema`` says ``type: "object"`` too |
| ``parameter-name`` | warning | Vertex AI ``FunctionDeclaration.parameters``: a parameter name starts with a letter or ``_`` and has only ``a-z A-Z 0-9 _``, at most 64 characters |

The first four are the Inspector's own checks, with its rule names and
severities, so that ``--strict`` means the same in both tools.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import asdict, dataclass
from typing import Any

# Where a subschema sits under a schema (JSON Schema 2020-12 and draft-07 applicators).
_MAPS = (
    "properties",
    "patternProperties",
    "dependentSchemas",
    "dependencies",
    "$defs",
    "definitions",
)
_ARRAYS = ("allOf", "anyOf", "oneOf", "prefixItems")
_SINGLE = (
    "items",
    "additionalItems",
    "contains",
    "not",
    "if",
    "then",
    "else",
    "additionalProperties",
    "unevaluatedItems",
    "unevaluatedProperties",
    "propertyNames",
    "contentSchema",
)
# Keywords under which a bare boolean is ordinary (true/false allow or forbid the rest).
_BOOLEAN_OK = {
    "additionalProperties",
    "unevaluatedProperties",
    "additionalItems",
    "unevaluatedItems",
}
# Keywords that constrain an instance: a schema with none accepts anything.
_CONSTRAINING = {
    "type", "enum", "const", "multipleOf", "maximum", "exclusiveMaximum", "minimum",
    "exclusiveMinimum", "maxLength", "minLength", "pattern", "format", "maxItems", "minItems",
    "uniqueItems", "maxContains", "minContains", "maxProperties", "minProperties", "required",
    "dependentRequired", "allOf", "anyOf", "oneOf", "not", "items", "prefixItems", "contains",
    "additionalItems", "unevaluatedItems", "properties", "patternProperties",
    "additionalProperties", "unevaluatedProperties", "propertyNames", "dependentSchemas",
    "dependencies", "$ref", "$dynamicRef", "$recursiveRef",
}  # fmt: skip
_JSON_TYPES = {"null", "boolean", "object", "array", "number", "string", "integer"}
_OPENAI_NAME = re.compile(r"[a-zA-Z0-9_-]{1,64}")
_GEMINI_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.:-]{0,63}")
_VERTEX_PARAMETER = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")
_MAX_DEPTH = 64

SOURCES = {
    "boolean-schema": "MCP Inspector 2.12.0 --strict",
    "type-union": "MCP Inspector 2.12.0 --strict; Gemini function declarations",
    "remote-ref": "MCP Inspector 2.12.0 --strict",
    "untyped-schema": "MCP Inspector 2.12.0 --strict",
    "tool-name": "OpenAI function calling; Gemini / Vertex AI FunctionDeclaration.name",
    "parameters-object": "OpenAI function calling; the MCP schema's inputSchema",
    "parameter-name": "Vertex AI FunctionDeclaration.parameters",
}


@dataclass(frozen=True)
class Finding:
    tool: str
    rule: str
    severity: str  # "error" or "warning"
    path: str  # inputSchema.properties.x, or "name"
    issue: str

    def as_json(self) -> dict[str, str]:
        return {**asdict(self), "source": SOURCES[self.rule]}


def check_tools(tools: list[Mapping[str, Any]]) -> list[Finding]:
    """The findings of every tool (its wire form: name, inputSchema, outputSchema)."""
    findings: list[Finding] = []
    for tool in tools:
        findings.extend(check_tool(tool))
    return findings


def check_tool(tool: Mapping[str, Any]) -> Iterator[Finding]:
    name = str(tool.get("name", ""))

    def found(rule: str, severity: str, path: str, issue: str) -> Finding:
        return Finding(name, rule, severity, path, issue)

    if not _OPENAI_NAME.fullmatch(name) or not _GEMINI_NAME.fullmatch(name):
        yield found(
            "tool-name",
            "error",
            "name",
            f"{name!r} is not a function name every provider takes: OpenAI wants "
            "a-z A-Z 0-9 _ - (1 to 64), Gemini a letter or _ first",
        )
    schema = tool.get("inputSchema")
    if isinstance(schema, Mapping):
        if schema.get("type") != "object" or any(k in schema for k in ("anyOf", "oneOf")):
            yield found(
                "parameters-object",
                "error",
                "inputSchema",
                "the parameters are not one object schema (type object, no anyOf/oneOf at the root)",
            )
        properties = schema.get("properties")
        if isinstance(properties, Mapping):
            for key in properties:
                if not _VERTEX_PARAMETER.fullmatch(str(key)):
                    yield found(
                        "parameter-name",
                        "warning",
                        _child("inputSchema.properties", str(key)),
                        f"parameter {key!r}: Vertex AI takes a-z A-Z 0-9 _ (a letter or _ first)",
                    )
    for where in ("inputSchema", "outputSchema"):
        if where in tool:
            yield from _walk(tool[where], where, None, 0, _has_ids(tool[where]), found)


def _walk(
    node: Any,
    path: str,
    keyword: str | None,
    depth: int,
    embedded_ids: bool,
    found: Callable[[str, str, str, str], Finding],
) -> Iterator[Finding]:
    if depth > _MAX_DEPTH:
        return
    if isinstance(node, bool):
        if keyword not in _BOOLEAN_OK:
            yield found(
                "boolean-schema",
                "error",
                path,
                f"a bare {str(node).lower()} where a schema object is expected",
            )
        return
    if not isinstance(node, Mapping):
        return
    kind = node.get("type")
    if (
        isinstance(kind, list)
        and kind
        and all(isinstance(t, str) and t in _JSON_TYPES for t in kind)
        and len(set(kind)) == len(kind)
    ):
        yield found(
            "type-union",
            "warning",
            path,
            f"type is an array {json.dumps(kind)}: one type per schema (anyOf) maps onto more clients",
        )
    ref = node.get("$ref")
    if isinstance(ref, str) and ref and not ref.startswith("#") and not embedded_ids:
        yield found("remote-ref", "warning", path, f"$ref {ref!r} points outside the document")
    constrains = any(key in node for key in _CONSTRAINING) or (
        "if" in node and ("then" in node or "else" in node)
    )
    if not constrains and keyword != "not":
        yield found("untyped-schema", "warning", path, "no validation keyword: accepts any value")
    for child, child_path, child_keyword in _children(node, path):
        yield from _walk(child, child_path, child_keyword, depth + 1, embedded_ids, found)


def _children(node: Mapping[str, Any], path: str) -> Iterator[tuple[Any, str, str]]:
    for key in _MAPS:
        value = node.get(key)
        if isinstance(value, Mapping):
            for name, sub in value.items():
                yield sub, _child(_child(path, key), str(name)), key
    for key in _ARRAYS:
        value = node.get(key)
        if isinstance(value, list):
            for index, sub in enumerate(value):
                yield sub, f"{_child(path, key)}[{index}]", key
    for key in _SINGLE:
        if key not in node:
            continue
        value = node[key]
        if key == "items" and isinstance(value, list):
            for index, sub in enumerate(value):
                yield sub, f"{_child(path, key)}[{index}]", key
            continue
        yield value, _child(path, key), key


def _child(parent: str, key: str) -> str:
    if re.fullmatch(r"[A-Za-z_$][A-Za-z0-9_$]*", key):
        return f"{parent}.{key}"
    return f"{parent}[{key!r}]"


def _has_ids(node: Any, depth: int = 0) -> bool:
    """Whether the schema declares an $id (then a non-# $ref may resolve inside it)."""
    if depth > _MAX_DEPTH or not isinstance(node, Mapping):
        return False
    if isinstance(node.get("$id"), str) and node["$id"]:
        return True
    return any(_has_ids(child, depth + 1) for child, _, _ in _children(node, ""))


def summary(findings: list[Finding]) -> str:
    errors = sum(1 for f in findings if f.severity == "error")
    warnings = len(findings) - errors
    tools = len({f.tool for f in findings})
    return (
        f"{errors} error{'s' * (errors != 1)}, {warnings} warning{'s' * (warnings != 1)} "
        f"across {tools} tool{'s' * (tools != 1)}"
    )
