"""Protocol facts (schema/protocol_facts.toml) are checked against each schema,
reach the generated method specs, and a new method of a new revision needs its
handler and nothing else by hand.

The demonstration takes 2025-11-25's schema from the mirror (never copied into
the project), adds a ``widgets/get`` request with its params and result
definitions and one fact (the params member ``Mcp-Name`` mirrors) in a
temporary project, generates a package of its own, and serves the method from a
handler class that overrides ``get_widget`` and nothing else.
"""

from __future__ import annotations

import asyncio
import copy
import importlib
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import REPO, SCHEMA_MIRROR

from mcpbind_codegen import facts, generate
from mcpbind_codegen.model import GenerationError
from mcpbind_codegen.sources import Config, LoadedSchema

REVISION = "2025-11-25"


def _config(root: Path, facts_file: Path | None = None) -> Config:
    return Config(
        root=root,
        sources=(),
        output=root / "src",
        pins_file=None,
        corrections_file=None,
        package="widgets_mcp",
        facts_file=facts_file,
    )


def _schema() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((SCHEMA_MIRROR / REVISION / "schema.json").read_text())
    return loaded


def _loaded(schema: dict[str, Any], revision: str = REVISION) -> LoadedSchema:
    return LoadedSchema(revision, schema, "0" * 64, "test", "released")


def _facts(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "protocol_facts.toml"
    path.write_text(text)
    return path


def _fact(method: str, **keys: str) -> str:
    lines = [f'[[fact]]\nmethod = "{method}"\nsource = "a test"']
    lines += [f"{key} = {value}" for key, value in keys.items()]
    return "\n".join(lines) + "\n"


def test_shipped_facts_name_their_source_and_known_methods() -> None:
    from mcpbind._core import lifecycle

    entries = facts.load(REPO / "schema" / "protocol_facts.toml")
    assert entries and all(entry["source"].strip() for entry in entries)
    shipped = {spec.method for spec in lifecycle.bindings().every_spec}
    assert facts.unknown_methods(entries, shipped) == []


def test_a_new_revision_leaves_a_misfit_fact_out(tmp_path: Path) -> None:
    """A revision nobody reviewed the facts for (one the shipped pins do not
    name) is generated without the facts that do not fit it, and says so."""
    path = _facts(tmp_path, _fact("tools/call", name_field='"title"', since='"2025-01-01"'))
    files, module = generate.render_package(
        _config(tmp_path, path), _loaded(_schema(), revision="2026-12-01")
    )
    tools_call = files["methods.py"].split("TOOLS_CALL:")[1].split(")\n")[0]
    assert 'name_field="name",' in tools_call  # the shipped fact, which fits
    assert any("no member 'title': left out" in note for note in module.notes)


def test_a_fact_with_an_unknown_key_is_an_error(tmp_path: Path) -> None:
    path = _facts(tmp_path, _fact("tools/call", name_feild='"name"'))
    with pytest.raises(GenerationError, match="unknown key name_feild"):
        facts.load(path)


def test_a_fact_without_its_source_is_an_error(tmp_path: Path) -> None:
    path = _facts(tmp_path, '[[fact]]\nmethod = "tools/call"\nname_field = "name"\n')
    with pytest.raises(GenerationError, match="no source"):
        facts.load(path)


def test_a_member_the_params_lack_is_an_error(tmp_path: Path) -> None:
    path = _facts(tmp_path, _fact("tools/call", name_field='"title"'))
    config = _config(tmp_path, path)
    with pytest.raises(GenerationError, match="tools/call .*no member 'title'"):
        generate.render_package(config, _loaded(_schema()))


def test_a_capability_the_sender_lacks_is_an_error(tmp_path: Path) -> None:
    path = _facts(
        tmp_path, _fact("notifications/tools/list_changed", sender_capability='["tools", "x"]')
    )
    with pytest.raises(GenerationError, match="ServerCapabilities has no tools.x"):
        generate.render_package(_config(tmp_path, path), _loaded(_schema()))


def test_stales_naming_no_request_is_an_error(tmp_path: Path) -> None:
    path = _facts(tmp_path, _fact("notifications/tools/list_changed", stales='["tool/list"]'))
    with pytest.raises(GenerationError, match="stales 'tool/list'"):
        generate.render_package(_config(tmp_path, path), _loaded(_schema()))


def test_a_fact_of_a_method_no_package_has_is_an_error(tmp_path: Path) -> None:
    path = _facts(tmp_path, _fact("tools/cal", name_field='"name"'))
    config = _config(tmp_path, path)
    _, module = generate.render_package(config, _loaded(_schema()))
    with pytest.raises(GenerationError, match="protocol facts of unknown methods: tools/cal$"):
        generate.check_facts(config, [module])


# ------------------------------------------------------------------ a new method


def _with_widgets(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` with a ``widgets/get`` request: the three definitions and the
    ClientRequest arm a new method of a new revision brings."""
    schema = copy.deepcopy(schema)
    defs = schema["$defs"] if "$defs" in schema else schema["definitions"]
    ref = "#/$defs/" if "$defs" in schema else "#/definitions/"
    defs["GetWidgetRequestParams"] = {
        "type": "object",
        "properties": {"name": {"type": "string"}},
        "required": ["name"],
    }
    defs["GetWidgetRequest"] = {
        "description": "Get a widget by name.",
        "type": "object",
        "properties": {
            "jsonrpc": {"const": "2.0", "type": "string"},
            "id": {"$ref": ref + "RequestId"},
            "method": {"const": "widgets/get", "type": "string"},
            "params": {"$ref": ref + "GetWidgetRequestParams"},
        },
        "required": ["jsonrpc", "id", "method", "params"],
    }
    defs["GetWidgetResult"] = {
        "type": "object",
        "properties": {"colour": {"type": "string"}},
        "required": ["colour"],
    }
    defs["ClientRequest"]["anyOf"].append({"$ref": ref + "GetWidgetRequest"})
    return schema


@pytest.fixture
def widgets_package(tmp_path: Path) -> Iterator[Any]:
    path = _facts(
        tmp_path,
        '[[fact]]\nmethod = "widgets/get"\nname_field = "name"\nsource = "the widgets SEP"\n',
    )
    config = _config(tmp_path, path)
    files, _ = generate.render_package(config, _loaded(_with_widgets(_schema())))
    root = tmp_path / "src" / "widgets_mcp"
    (root / "v2025_11_25").mkdir(parents=True)
    for name, source in files.items():
        (root / "v2025_11_25" / name).write_text(source)
    for name, source in generate.render_index(config, {REVISION: "unpinned"}).items():
        (root / name).write_text(source)
    sys.path.insert(0, str(tmp_path / "src"))
    try:
        yield importlib.import_module("widgets_mcp.v2025_11_25")
    finally:
        sys.path.remove(str(tmp_path / "src"))
        for name in [n for n in sys.modules if n.split(".")[0] == "widgets_mcp"]:
            del sys.modules[name]


def test_a_new_method_needs_only_its_handler(widgets_package: Any) -> None:
    """Regenerating and writing ``get_widget`` is all: the method is routed,
    its capability declared, its params and result typed, its facts known."""
    from support.transports import memory_pair

    from mcpbind._client.client import Client
    from mcpbind._core import lifecycle
    from mcpbind._server.server import Server, ServerSession

    w = widgets_package
    spec = w.methods.WIDGETS_GET
    assert (spec.params, spec.result) == (w.GetWidgetRequestParams, w.GetWidgetResult)
    assert spec.handler == "get_widget" and spec.name_field == "name"
    assert lifecycle.bindings("widgets_mcp").name_fields["widgets/get"] == "name"

    class Widgets(w.ServerHandlers):  # the one hand edit
        async def get_widget(self, params: Any, ctx: Any) -> Any:
            return w.GetWidgetResult(colour=f"{params.name} is blue")

    async def scenario() -> Any:
        server = Server(Widgets(), name="widgets", version="1")
        client_end, server_end = memory_pair("client", "server")
        served = asyncio.create_task(ServerSession(server, server_end).run())
        try:
            session = await Client(name="c", version="1", package="widgets_mcp").connect(client_end)
            try:
                result = await session.request(spec, w.GetWidgetRequestParams(name="gear"))
            finally:
                await session.close()
        finally:
            await client_end.close()
            await asyncio.wait_for(served, 10)
        return result

    result = asyncio.run(scenario())
    assert isinstance(result, w.GetWidgetResult)
    assert result.colour == "gear is blue"


def test_a_new_method_reaches_every_generated_interface(widgets_package: Any) -> None:
    """A new method of a new revision is in the dispatch table, the client stub,
    the handler interface and the answering handlers an application layer
    implements, with no hand edit in the runtime: an object answering
    ``get_widget`` behind the generated ``AnsweringHandlers`` is served, and
    what it does not serve is neither routed nor declared."""
    from support.transports import memory_pair

    from mcpbind._client.client import Client
    from mcpbind._core import lifecycle
    from mcpbind._core.jsonrpc import McpError
    from mcpbind._server.server import Server, ServerSession

    w = widgets_package
    spec = w.methods.CLIENT_REQUESTS["widgets/get"]
    assert spec is w.methods.WIDGETS_GET
    assert callable(w.ClientStub.get_widget)
    assert "get_widget" in vars(w.ServerHandlers)
    assert "get_widget" in vars(w.ServerAnswers)
    assert "get_widget" in vars(w.AnsweringHandlers)

    class Answers:  # the one hand edit: its answer (the rest refuse, unserved)
        extra_capabilities: dict[str, Any] = {}

        def serves(self, handler: str) -> bool:
            return handler == "get_widget"

        async def get_widget(self, params: Any, ctx: Any) -> Any:
            return w.GetWidgetResult(colour=f"{params.name} is green")

    async def scenario() -> tuple[Any, Any, McpError]:
        server = Server(w.AnsweringHandlers(Answers()), name="widgets", version="1")
        client_end, server_end = memory_pair("client", "server")
        served = asyncio.create_task(ServerSession(server, server_end).run())
        try:
            session = await Client(name="c", version="1", package="widgets_mcp").connect(client_end)
            try:
                result = await session.request(spec, w.GetWidgetRequestParams(name="cog"))
                with pytest.raises(McpError) as refused:
                    await session.request(w.methods.TOOLS_LIST, w.PaginatedRequestParams())
                capabilities = session.server_capabilities
            finally:
                await session.close()
        finally:
            await client_end.close()
            await asyncio.wait_for(served, 10)
        return result, capabilities, refused.value

    result, capabilities, refused = asyncio.run(scenario())
    assert isinstance(result, w.GetWidgetResult)
    assert result.colour == "cog is green"
    assert refused.code == -32601
    assert not lifecycle.has_capability(capabilities, ("tools",))
