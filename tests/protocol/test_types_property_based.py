"""Instances drawn from the official schemas decode with the generated types and
encode back to the same JSON.

hypothesis-jsonschema draws instances of each definition from the corrected
schema (schema/corrections.toml applied, as the generator does), with references
inlined. What is drawn is adjusted to what the generated types promise:

* Objects the generator closes (declared properties, no ``additionalProperties``)
  are closed here too. JSON Schema leaves them open, but a generated Struct keeps
  only its declared keys, by design; open objects (``OpenObject``, ``dict``)
  stay open and must keep every key, which this test checks.
* ``allOf`` is merged into one object the way the generator merges it.
* ``format`` is dropped: the types do not check string formats, so any string
  is a fair value (and drawing URIs is slow).

A definition that is a union of other definitions is drawn as one of its arms.
Definitions drawn from the same schema (across revisions, or aliases such as
``EmptyResult``) share one test, which checks each generated type of the group
against every drawn instance.

The seed is fixed (``derandomize``) so that a run is reproducible; set
MCP_HYPOTHESIS_PROFILE=mcp-types-explore to draw more, and differently.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from typing import Any

import hypothesis_jsonschema._canonicalise as hjs_canonicalise
import hypothesis_jsonschema._from_schema as hjs_from_schema
import pytest
from conftest import REPO, STABLE_REVISIONS, definitions, load_schema, package
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis_jsonschema import from_schema

from mcpbind.codec import decode, encode
from mcpbind_codegen import corrections

settings.register_profile(
    "mcp-types",
    max_examples=10,
    deadline=None,
    database=None,
    derandomize=True,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.large_base_example,
    ],
)
settings.register_profile(
    "mcp-types-explore", settings.get_profile("mcp-types"), max_examples=200, derandomize=False
)
PROFILE = settings.get_profile(os.environ.get("MCP_HYPOTHESIS_PROFILE", "mcp-types"))

# Sizes are bounded to keep the run short: arrays hold at most MAX_ITEMS items
# and open objects at most MAX_EXTRA keys beyond the declared ones. Free-form
# JSON values (`{}`) come from hypothesis-jsonschema's own bounded strategy.
MAX_ITEMS = 3
MAX_EXTRA = 3
ANY_JSON: dict[str, Any] = {}

# Definitions hypothesis-jsonschema cannot draw, with what is drawn instead.
# It refuses recursive references; the JSON value family (2026-07-28 on) is
# self-referencing. With the json-value-number-null correction JSONValue admits
# every JSON value, so these replacements are exact (but for the size bound),
# and the definitions that use them are drawn as usual.
RECURSIVE_REPLACEMENTS: dict[str, dict[str, Any]] = {
    "JSONValue": ANY_JSON,
    "JSONObject": {"type": "object", "maxProperties": MAX_EXTRA},
    "JSONArray": {"type": "array", "maxItems": MAX_ITEMS},
}

_DROPPED_KEYWORDS = {"description", "title", "format", "$schema", "allOf"}


# Properties a [[discriminator]] of schema/corrections.toml names, with the
# value their absence means: the specification refuses any value but those of
# the arms, so each definition's is drawn as its own (its field default), and
# required where absence would mean another arm's.
DISCRIMINATING = {
    entry["property"]: entry["absent"]
    for entry in corrections.load(REPO / "schema" / "corrections.toml")
    if entry.get("kind") == "discriminator"
}


def _corrected(revision: str) -> dict[str, Any]:
    entries = corrections.load(REPO / "schema" / "corrections.toml")
    schema, _ = corrections.apply(load_schema(revision), revision, entries)
    return schema


def _union_arms(node: dict[str, Any]) -> list[str] | None:
    """The definitions a definition that is only a union of references names."""
    if set(node) - {"anyOf", "description"} or not all(
        set(arm) == {"$ref"} for arm in node.get("anyOf", ())
    ):
        return None
    return [arm["$ref"].rsplit("/", 1)[-1] for arm in node["anyOf"]]


def _drawable(revision: str) -> dict[str, Any]:
    """Each definition of a revision as what to draw it from: a self-contained
    schema, or for a union of definitions the list of its arms."""
    schema = _corrected(revision)
    defs = definitions(schema)
    prefix = "#/$defs/" if "$defs" in schema else "#/definitions/"

    def inline(node: Any, stack: tuple[str, ...], close: bool = True) -> Any:
        if node is True:
            return ANY_JSON
        if not isinstance(node, dict):
            return node
        if "$ref" in node:
            name = node["$ref"].removeprefix(prefix)
            if name in RECURSIVE_REPLACEMENTS:
                return RECURSIVE_REPLACEMENTS[name]
            if name in stack:
                raise AssertionError(f"{revision}: unexpected recursive reference to {name}")
            return inline(defs[name], (*stack, name), close)
        out: dict[str, Any] = {}
        for key, value in node.items():
            if key == "properties":
                out[key] = {
                    prop: (
                        {"const": sub["default"]}
                        if prop in DISCRIMINATING and "default" in sub
                        else inline(sub, stack)
                    )
                    for prop, sub in value.items()
                }
            elif key in ("items", "additionalProperties"):
                out[key] = inline(value, stack)
            elif key == "anyOf":
                out[key] = [inline(arm, stack) for arm in value]
            elif key not in _DROPPED_KEYWORDS:
                out[key] = value
        for prop, absent in DISCRIMINATING.items():
            drawn = out.get("properties", {}).get(prop, {})
            if drawn.get("const", absent) != absent:
                out["required"] = sorted({*out.get("required", ()), prop})
        if "allOf" in node:
            # One object with every part's properties, as the generator merges them.
            parts = [inline(part, stack, close=False) for part in node["allOf"]] + [out]
            properties: dict[str, Any] = {}
            required: set[str] = set()
            open_ = False
            for part in parts:
                # A later part narrows what an earlier one declared (an error's
                # `code`, `data`): the generator keeps the later one.
                properties.update(part.get("properties") or {})
                required |= set(part.get("required", ()))
                open_ = open_ or "additionalProperties" in part
            out = {"type": "object", "properties": properties, "required": sorted(required)}
            if open_:
                out["additionalProperties"] = ANY_JSON
        if not out:
            return ANY_JSON
        if out.get("properties"):
            if close and "additionalProperties" not in out:
                out["additionalProperties"] = False
        elif out.get("type") == "object":
            out.setdefault("additionalProperties", ANY_JSON)
        if out.get("additionalProperties", False) is not False:
            out.setdefault("maxProperties", len(out.get("properties", ())) + MAX_EXTRA)
        if out.get("type") == "array":
            out.setdefault("maxItems", MAX_ITEMS)
        return out

    drawable: dict[str, Any] = {}
    for name in sorted(defs):
        if name in RECURSIVE_REPLACEMENTS:
            continue
        arms = _union_arms(defs[name])
        drawable[name] = arms if arms is not None else inline(defs[name], (name,))
    return drawable


# What to draw, by key: a schema, or the keys of a union's arms. Definitions
# with the same key (across revisions, or aliases such as EmptyResult) are
# drawn once for all of them.
_SOURCES: dict[str, Any] = {}


def _groups() -> Iterator[Any]:
    groups: dict[str, list[tuple[str, str]]] = {}
    for revision in STABLE_REVISIONS:
        drawable = _drawable(revision)
        keys: dict[str, str] = {}

        def key_of(name: str) -> str:
            if name not in keys:
                source = drawable[name]
                if isinstance(source, list):
                    source = [key_of(arm) for arm in source]
                keys[name] = json.dumps(source, sort_keys=True)
                _SOURCES[keys[name]] = source
            return keys[name]

        for name in drawable:
            groups.setdefault(key_of(name), []).append((revision, name))
    for key, members in groups.items():
        names = sorted({name for _, name in members})
        label = "+".join(names) + "@" + ",".join(sorted({revision for revision, _ in members}))
        yield pytest.param(key, tuple(members), id=label)


GROUPS = list(_groups())
_STRATEGIES: dict[str, st.SearchStrategy[Any]] = {}


def _strategy(key: str) -> st.SearchStrategy[Any]:
    """hypothesis-jsonschema's strategy for a schema; for a union, one of its arms'."""
    found = _STRATEGIES.get(key)
    if found is None:
        source = _SOURCES[key]
        found = (
            st.one_of([_strategy(arm) for arm in source])
            if isinstance(source, list)
            else from_schema(source)
        )
        _STRATEGIES[key] = found
    return found


@pytest.fixture(scope="module", autouse=True)
def _memoised_strategies() -> Iterator[None]:
    """Build each sub-schema's strategy, and canonicalise each schema, once.

    hypothesis-jsonschema rebuilds (and re-canonicalises) the strategy of every
    property value on every draw, and canonicalises every nested schema again
    for each schema that contains it; for the nested MCP definitions that is
    most of the run time. Both are pure functions of the schema, so keeping
    their results (by schema object and by schema content; canonical forms are
    handed out as fresh copies, as callers may change them) changes nothing
    but the speed. The pinned hypothesis-jsonschema has both functions; if a
    release renames them, setattr below fails loudly.
    """
    build = getattr(hjs_from_schema, "__from_schema")
    canonicalise = hjs_canonicalise.canonicalish
    by_object: dict[tuple[int, int, int], tuple[Any, Any]] = {}
    by_content: dict[tuple[str, int, int], Any] = {}
    canonical: dict[str, str] = {}

    def memoised_build(schema: Any, *, alphabet: Any, custom_formats: Any) -> Any:
        key = (id(schema), id(alphabet), id(custom_formats))
        found = by_object.get(key)
        if found is None or found[0] is not schema:
            content = (json.dumps(schema, sort_keys=True), id(alphabet), id(custom_formats))
            strategy = by_content.get(content)
            if strategy is None:
                strategy = by_content[content] = build(
                    schema, alphabet=alphabet, custom_formats=custom_formats
                )
            # The schema is kept alive with its strategy, so its id stays unique.
            found = by_object[key] = (schema, strategy)
        return found[1]

    def memoised_canonicalise(schema: Any) -> Any:
        key = json.dumps(schema, sort_keys=True)
        found = canonical.get(key)
        if found is None:
            found = canonical[key] = json.dumps(canonicalise(schema))
        return json.loads(found)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(hjs_from_schema, "__from_schema", memoised_build)
        patch.setattr(hjs_from_schema, "canonicalish", memoised_canonicalise)
        patch.setattr(hjs_canonicalise, "canonicalish", memoised_canonicalise)
        yield


@pytest.mark.parametrize(("key", "members"), GROUPS)
def test_drawn_instances_round_trip(key: str, members: tuple[tuple[str, str], ...]) -> None:
    types = [(f"{revision} {name}", getattr(package(revision), name)) for revision, name in members]

    @PROFILE
    @given(_strategy(key))
    def round_trip(instance: Any) -> None:
        for label, type_ in types:
            decoded = decode(json.dumps(instance), type_)
            assert (
                _without_filled_defaults(json.loads(encode(decoded)), instance) == instance
            ), label

    round_trip()


# Properties schema/corrections.toml gives a default ([[field_default]]): absent
# in an instance, they come back with their default value.
_DEFAULTED = {
    "resultType": ("complete", "input_required"),
    "ttlMs": (0,),
    "cacheScope": ("private",),
}


def _without_filled_defaults(encoded: Any, original: Any) -> Any:
    if isinstance(encoded, dict) and isinstance(original, dict):
        return {
            key: _without_filled_defaults(value, original.get(key))
            for key, value in encoded.items()
            if key in original or value not in _DEFAULTED.get(key, ())
        }
    if isinstance(encoded, list) and isinstance(original, list) and len(encoded) == len(original):
        return [_without_filled_defaults(e, o) for e, o in zip(encoded, original)]
    return encoded


def _references(node: Any) -> set[str]:
    if isinstance(node, dict):
        found = {node["$ref"].rsplit("/", 1)[-1]} if "$ref" in node else set()
        return found.union(*(_references(value) for value in node.values()))
    if isinstance(node, list):
        return set().union(*(_references(value) for value in node))
    return set()


def _reachable(defs: dict[str, Any], name: str) -> set[str]:
    reach: set[str] = set()
    todo = [name]
    while todo:
        for ref in _references(defs[todo.pop()]) - reach:
            reach.add(ref)
            todo.append(ref)
    return reach


def test_every_definition_is_drawn() -> None:
    """Nothing is left out silently: every definition of every stable revision
    is in a group, save the recursive ones, replaced as RECURSIVE_REPLACEMENTS says."""
    drawn = {member for param in GROUPS for member in param.values[1]}
    for revision in STABLE_REVISIONS:
        defs = definitions(_corrected(revision))
        replaced = set(defs) & set(RECURSIVE_REPLACEMENTS)
        assert {name for r, name in drawn if r == revision} == set(defs) - replaced
        for name in replaced:
            # Each replaced definition still reaches a recursive one (else drop it from the list) ...
            assert any(ref in _reachable(defs, ref) for ref in {name} | _reachable(defs, name)), (
                revision,
                name,
            )
        if "JSONValue" in replaced:
            # ... and JSONValue, corrected, admits every JSON value.
            arms = defs["JSONValue"]["anyOf"]
            kinds = {
                t
                for arm in arms
                for t in (
                    [arm["type"]] if isinstance(arm.get("type"), str) else arm.get("type", [])
                )
            }
            assert "JSONObject" in _references(arms)
            assert {"array", "string", "integer", "number", "boolean", "null"} <= kinds
