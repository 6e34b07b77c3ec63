"""The MCP Apps types (``mcpbind_protocol.ext_apps``), generated from the schema
``@modelcontextprotocol/ext-apps`` 2.0.4 publishes, against that schema.

The package ships no example instances of its types (its ``*.examples`` files
are TypeScript snippets), so instances of each of the schema's 39 definitions
are drawn from it with hypothesis-jsonschema, after the corrections the
generator applies (schema/corrections.toml, ``extension = "apps"``). Each
decodes with the generated type of its name and encodes back to the same JSON.
What is drawn is adjusted to what the generated types promise, as in
test_types_property_based.py: objects the generator closes are closed here
too; ``pattern``, ``format`` and ``propertyNames`` are dropped (the types do
not check strings, and keys are strings either way); sizes are bounded.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgspec
import pytest
from conftest import REPO
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis_jsonschema import from_schema

import mcpbind_protocol
from mcpbind.codec import decode, encode
from mcpbind_codegen import corrections, sources
from mcpbind_protocol import ext_apps
from mcpbind_protocol.ext_apps import types as apps_types

MAX_ITEMS = 2
MAX_EXTRA = 2
_DROPPED = {"description", "title", "format", "$schema", "pattern", "propertyNames", "$defs"}


def _published() -> dict[str, Any]:
    config = sources.find_config(REPO)
    pin = sources.load_extension_pins(config)["apps"]
    return sources.load_extension(pin, config).schema


def _corrected() -> dict[str, Any]:
    entries = corrections.load_all(sources.find_config(REPO).corrections_files)
    schema, applied = corrections.apply_extension(_published(), "apps", entries)
    assert applied.entries  # the corrections the generated header lists
    return schema


PUBLISHED = _published()
CORRECTED = _corrected()
NAMES = sorted(PUBLISHED["$defs"])


def _drawable(node: Any) -> Any:
    if node is True or node == {}:
        return {}
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key == "properties":
            out[key] = {prop: _drawable(sub) for prop, sub in value.items()}
        elif key in ("items", "additionalProperties"):
            out[key] = _drawable(value) if value is not False else False
        elif key == "anyOf":
            out[key] = [_drawable(arm) for arm in value]
        elif key not in _DROPPED:
            out[key] = value
    if out.get("properties") and "additionalProperties" not in out:
        out["additionalProperties"] = False  # the generator closes such an object
    if out.get("type") == "object" and out.get("additionalProperties", False) is not False:
        named = set(out.get("properties", ())) | set(out.get("required", ()))
        out.setdefault("maxProperties", len(named) + MAX_EXTRA)
    if out.get("type") == "array":
        out.setdefault("maxItems", MAX_ITEMS)
    return out


def test_every_definition_of_the_published_schema_is_generated() -> None:
    """39 definitions, each a type of the generated package, and nothing
    besides them but what the corrections add (the message unions, a result)."""
    assert len(NAMES) == 39
    added = {"ClientRequest", "ServerRequest", "ClientNotification", "ServerNotification"}
    assert set(ext_apps.DEFINITIONS) == set(NAMES) | added | {"McpUiUpdateModelContextResult"}
    assert ext_apps.EXTENSION_ID == "io.modelcontextprotocol/ui"
    assert mcpbind_protocol.EXTENSIONS[ext_apps.EXTENSION_ID] == "mcpbind_protocol.ext_apps"
    pin = sources.load_extension_pins(sources.find_config(REPO))["apps"]
    assert ext_apps.SCHEMA_SHA256 == pin.sha256


def test_the_ui_methods_are_generated_with_their_directions() -> None:
    methods = ext_apps.methods
    assert set(methods.CLIENT_REQUESTS) == {
        "ui/initialize",
        "ui/open-link",
        "ui/message",
        "ui/request-display-mode",
        "ui/update-model-context",
        "ui/download-file",
    }
    assert set(methods.SERVER_REQUESTS) == {"ui/resource-teardown"}
    assert "ui/notifications/size-changed" in methods.CLIENT_NOTIFICATIONS
    assert "ui/notifications/tool-result" in methods.SERVER_NOTIFICATIONS
    initialize = methods.METHODS["ui/initialize"]
    assert initialize.result is apps_types.McpUiInitializeResult
    # Stubs and handlers are named without the prefix every message repeats (pins.toml).
    assert callable(ext_apps.ClientStub.open_link) and callable(
        ext_apps.ServerStub.resource_teardown
    )
    assert callable(ext_apps.ClientHandlers.on_tool_result)


@pytest.mark.parametrize("name", NAMES)
@settings(
    max_examples=8,
    deadline=None,
    database=None,
    derandomize=True,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.large_base_example,
        HealthCheck.function_scoped_fixture,
    ],
)
@given(data=st.data())
def test_drawn_instances_decode_and_round_trip(name: str, data: st.DataObject) -> None:
    schema = _drawable(CORRECTED["$defs"][name])
    instance = data.draw(from_schema(schema), label=name)
    generated = getattr(apps_types, name)
    value = decode(json.dumps(instance).encode(), generated)
    assert json.loads(encode(value)) == instance


def test_a_wrong_instance_is_refused() -> None:
    """The round trip is not vacuous: a value of the wrong type is reported."""
    with pytest.raises(msgspec.ValidationError, match="resourceUri"):
        decode(b'{"resourceUri": 7}', apps_types.McpUiToolMeta)
    with pytest.raises(msgspec.ValidationError):
        decode(b'{"connectDomains": "https://a.example"}', apps_types.McpUiResourceCsp)


def test_the_schema_is_never_committed() -> None:
    assert not list(Path(REPO / "schema").rglob("ext-apps*"))
    tracked = REPO / "schema" / "extensions"
    assert sorted(p.name for p in tracked.iterdir()) == ["tasks.json"]
