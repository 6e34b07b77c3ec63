"""Regenerating after a specification change, as a project outside this repository would.

The 2025-11-25 schema is changed the way a new revision changes it (a paginated
``resources/search`` request, an ``resources/archive`` request whose result
type the schema forgot, a new optional ``Tool.deprecated``), generated under a
revision name of its own into a scratch project in a temporary folder, and
used there by a server and a client over stdio, all type-checked with mypy.
One generation is shared by the tests of this module; the failure cases
generate on their own.
"""

from __future__ import annotations

import copy
import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from conftest import REPO, SCHEMA_MIRROR, importing
from test_codegen_cli import assert_one_line_error, make_project, run, snapshot

REVISION = "2025-12-01"
PACKAGE = "scratch_mcp"
FOLDER = "v2025_12_01"


def _request(method: str, params: str | None, description: str) -> dict[str, Any]:
    properties: dict[str, Any] = {
        "id": {"$ref": "#/$defs/RequestId"},
        "jsonrpc": {"const": "2.0", "type": "string"},
        "method": {"const": method, "type": "string"},
    }
    required = ["id", "jsonrpc", "method"]
    if params is not None:
        properties["params"] = {"$ref": f"#/$defs/{params}"}
        required.append("params")
    return {
        "description": description,
        "properties": properties,
        "required": required,
        "type": "object",
    }


def changed_schema(**extra_requests: dict[str, Any]) -> dict[str, Any]:
    """2025-11-25 with a new paginated request, a request without a result
    type, a new optional Tool field, and any ``extra_requests``."""
    schema: dict[str, Any] = json.loads((SCHEMA_MIRROR / "2025-11-25" / "schema.json").read_text())
    defs = schema["$defs"]
    params = copy.deepcopy(defs["PaginatedRequestParams"])
    params["properties"]["query"] = {"description": "What to look for.", "type": "string"}
    params["required"] = ["query"]
    defs["SearchResourcesRequestParams"] = params
    defs["SearchResourcesRequest"] = _request(
        "resources/search", "SearchResourcesRequestParams", "Search resources."
    )
    defs["SearchResourcesResult"] = copy.deepcopy(defs["ListResourcesResult"])
    defs["ArchiveResourcesRequest"] = _request("resources/archive", None, "Archive every resource.")
    defs["Tool"]["properties"]["deprecated"] = {
        "description": "Whether the tool is deprecated.",
        "type": "boolean",
    }
    defs.update(extra_requests)
    arms = ["SearchResourcesRequest", "ArchiveResourcesRequest", *extra_requests]
    defs["ClientRequest"]["anyOf"] += [{"$ref": f"#/$defs/{name}"} for name in arms]
    return schema


SERVER = """
from __future__ import annotations

from typing import Any

from typing_extensions import override

from scratch_mcp import v2025_12_01 as mcp
from mcpbind.codec import UNSET
from mcpbind.methods import RequestContext
from mcpbind._server.server import Server
from mcpbind.serving import run_stdio

RESOURCES = [mcp.Resource(uri=f"file:///{n}.txt", name=f"r{n}") for n in range(5)]
KEYWORDS: dict[str, Any] = {"$defs": {"X": {"type": "integer"}}, "additionalProperties": False}
INPUT = mcp.ToolInputSchema(type="object", properties={"x": {"$ref": "#/$defs/X"}}, **KEYWORDS)


class Scratch(mcp.ServerHandlers):
    @override
    async def list_tools(self, params: mcp.PaginatedRequestParams | None, ctx: RequestContext) -> mcp.ListToolsResult:
        return mcp.ListToolsResult(tools=[mcp.Tool(name="old", input_schema=INPUT, deprecated=True)])

    @override
    async def list_resources(self, params: mcp.PaginatedRequestParams | None, ctx: RequestContext) -> mcp.ListResourcesResult:
        return mcp.ListResourcesResult(resources=RESOURCES)

    @override
    async def search_resources(
        self, params: mcp.SearchResourcesRequestParams, ctx: RequestContext
    ) -> mcp.SearchResourcesResult:
        found = [r for r in RESOURCES if params.query in r.uri]
        start = int(params.cursor) if isinstance(params.cursor, str) else 0
        page = found[start : start + 1]
        more = start + 1 < len(found)
        return mcp.SearchResourcesResult(resources=page, next_cursor=str(start + 1) if more else UNSET)


if __name__ == "__main__":
    run_stdio(Server(Scratch(), name="scratch", version="1.0"))
"""

CLIENT = """
from __future__ import annotations

import asyncio
import json
import sys

from scratch_mcp import v2025_12_01 as mcp
from mcpbind._client.client import Client, connect_stdio
from mcpbind.codec import encode
from mcpbind._transports.stdio import StdioServerParameters


async def main() -> None:
    client = Client(name="scratch-client", version="1.0", package="scratch_mcp")
    async with connect_stdio(client, StdioServerParameters(sys.executable, ["server.py"])) as session:
        server = mcp.ClientStub(session)
        listed = [r.name async for r in server.iter_resources(timeout=10)]
        searched = [r.name async for r in server.iter_search_resources("3", timeout=10)]
        tools = await server.list_tools(timeout=10)
        tool: mcp.Tool = tools.tools[0]
        print(json.dumps({
            "version": session.protocol_version,
            "listed": listed,
            "searched": searched,
            "deprecated": tool.deprecated,
            "input_schema": json.loads(encode(tool.input_schema)),
        }))


asyncio.run(main())
"""


@pytest.fixture(scope="module")
def scratch(
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[Path, subprocess.CompletedProcess[str]]:
    """A project outside the repository with the changed revision generated into it."""
    root = tmp_path_factory.mktemp("scratch")
    project = make_project(root / "project", [f"mirror:{SCHEMA_MIRROR}"], package=PACKAGE)
    schema = root / "schema.json"
    schema.write_text(json.dumps(changed_schema()))
    result = run(project, "--schema", str(schema), "--revision", REVISION, "--no-verify")
    assert result.returncode == 0, result.stderr
    (project / "server.py").write_text(textwrap.dedent(SERVER))
    (project / "client.py").write_text(textwrap.dedent(CLIENT))
    return project, result


def _module(project: Path, name: str) -> str:
    return (project / "generated" / PACKAGE / FOLDER / name).read_text()


def test_pagination_helpers_over_one_field_do_not_collide(scratch: tuple[Path, Any]) -> None:
    client = _module(scratch[0], "client.py")
    assert client.count("    async def iter_resources(") == 1
    assert client.count("    async def iter_search_resources(") == 1
    helper = client.split("    async def iter_resources(")[1].split("    async def ")[0]
    assert "await self.list_resources(" in helper


def test_name_collision_is_an_error_naming_both_sources(tmp_path: Path) -> None:
    project = make_project(tmp_path / "project", [f"mirror:{SCHEMA_MIRROR}"], package=PACKAGE)
    schema = tmp_path / "schema.json"
    # "tools_list" and "tools/list" both make the method constant TOOLS_LIST.
    clash = _request("tools_list", None, "The same list under another spelling.")
    schema.write_text(json.dumps(changed_schema(UnderscoredListToolsRequest=clash)))
    result = run(project, "--schema", str(schema), "--revision", REVISION, "--no-verify")
    assert_one_line_error(
        result,
        "generated name 'TOOLS_LIST' in methods.py comes from both",
        "method tools/list",
        "method tools_list",
    )
    assert not (project / "generated").exists()


def test_corrections_are_carried_forward_and_reported(
    scratch: tuple[Path, subprocess.CompletedProcess[str]],
) -> None:
    project, result = scratch
    assert (
        f"mcp-codegen: {REVISION}: corrections carried forward from 2025-11-25: "
        "applied: elicit-result-number, tool-input-schema-open, tool-output-schema-open, "
        "capabilities-extensions; no longer applicable: none\n"
    ) in result.stderr
    header = _module(project, "types.py").split('"""')[0]
    assert (
        "# corrections carried forward from 2025-11-25 (this revision has none of its own):"
        in header
    )
    assert (
        "#   tool-input-schema-open: /$defs/Tool/properties/inputSchema/additionalProperties"
        in header
    )


def test_carried_correction_whose_path_is_gone_is_reported(tmp_path: Path) -> None:
    project = make_project(tmp_path / "project", [f"mirror:{SCHEMA_MIRROR}"], package=PACKAGE)
    schema = changed_schema()
    del schema["$defs"]["Tool"]["properties"]["outputSchema"]
    (tmp_path / "schema.json").write_text(json.dumps(schema))
    result = run(
        project, "--schema", str(tmp_path / "schema.json"), "--revision", REVISION, "--no-verify"
    )
    assert result.returncode == 0, result.stderr
    assert "no longer applicable: tool-output-schema-open\n" in result.stderr
    header = _module(project, "types.py").split('"""')[0]
    assert (
        "#   tool-output-schema-open: no longer applicable (no /$defs/Tool/properties/outputSchema/"
        in header
    )


def test_missing_result_type_is_reported(
    scratch: tuple[Path, subprocess.CompletedProcess[str]],
) -> None:
    project, result = scratch
    note = "resources/archive: no ArchiveResourcesResult or ArchiveResourcesResultResponse definition; its result is typed as EmptyResult"
    assert f"mcp-codegen: {REVISION}: warning: {note}\n" in result.stderr
    assert f"# note: {note}" in _module(project, "methods.py")
    # The requests whose result the specification leaves empty are no news.
    assert "ping" not in result.stderr


def test_unpinned_revision_is_not_labelled_the_draft(scratch: tuple[Path, Any]) -> None:
    project = scratch[0]
    init = _module(project, "__init__.py")
    assert '\nSTATUS = "unpinned"\n' in init and "\nUNSTABLE = False\n" in init
    assert (
        _module(project, "types.py").splitlines()[1]
        == f"# revision: {REVISION} (unpinned: no pin verified this schema)"
    )


def test_generated_draft_changes_no_tracked_file(tmp_path: Path) -> None:
    project = make_project(tmp_path / "project", [f"mirror:{SCHEMA_MIRROR}"])
    shutil.copytree(
        REPO / "generated" / "mcpbind_protocol",
        project / "generated" / "mcpbind_protocol",
        ignore=shutil.ignore_patterns("__pycache__", "vdraft"),
    )
    index = project / "generated" / "mcpbind_protocol" / "__init__.py"
    before = snapshot(project / "generated")
    stamp = index.stat().st_mtime_ns
    result = run(project, "--revision", "draft")
    assert result.returncode == 0, result.stderr
    after = {
        k: v
        for k, v in snapshot(project / "generated").items()
        if not k.startswith("mcpbind_protocol/vdraft")
    }
    assert after == before
    assert index.stat().st_mtime_ns == stamp


def test_server_and_client_of_a_generated_package_speak_its_revision(
    scratch: tuple[Path, Any],
) -> None:
    project = scratch[0]
    env = importing(project / "generated")
    done = subprocess.run(
        [sys.executable, "client.py"],
        cwd=project,
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    assert answer["version"] == REVISION  # pin + generate: no runtime list to edit
    assert answer["listed"] == ["r0", "r1", "r2", "r3", "r4"]
    assert answer["searched"] == ["r3"]
    assert answer["deprecated"] is True
    # The carried-forward correction keeps the tool's JSON Schema open.
    assert answer["input_schema"] == {
        "type": "object",
        "properties": {"x": {"$ref": "#/$defs/X"}},
        "$defs": {"X": {"type": "integer"}},
        "additionalProperties": False,
    }


def test_scratch_project_type_checks(scratch: tuple[Path, Any]) -> None:
    project = scratch[0]
    config = project / "mypy.ini"
    # The generated package is checked too: mypy follows the imports into it.
    config.write_text(
        f"[mypy]\nstrict = True\nmypy_path = generated:{REPO / 'runtime'}\ncache_dir = .mypy_cache\n"
    )
    checked = subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", str(config), "server.py", "client.py"],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_every_task_augmented_request_gets_task_stubs() -> None:
    """2025-11-25 lets tools/call, sampling and elicitation be task-augmented;
    2025-06-18 has no tasks."""
    from mcpbind_protocol import v2025_06_18 as old
    from mcpbind_protocol import v2025_11_25 as mcp

    for stub, name in [
        (mcp.ClientStub, "call_tool"),
        (mcp.ServerStub, "create_message"),
        (mcp.ServerStub, "elicit"),
    ]:
        assert hasattr(stub, f"{name}_as_task") and hasattr(stub, f"{name}_task_result"), name
    assert mcp.methods.TOOLS_CALL_AS_TASK.result is mcp.CreateTaskResult
    assert mcp.methods.TOOLS_CALL_TASK_RESULT.method == "tasks/result"
    assert mcp.methods.TOOLS_CALL_TASK_RESULT.result is mcp.CallToolResult
    assert not [n for n in vars(old.methods) if n.endswith("_AS_TASK")]
