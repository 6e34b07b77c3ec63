"""``mcp-codegen diff``: API differences between real revisions, checked
against excerpts verified by hand in the official schemas, and between a
revision and a schema file; Markdown and JSON."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import REPO, load_schema
from test_codegen_cli import run
from test_codegen_regenerate import changed_schema


@pytest.fixture(scope="module")
def june_to_november() -> dict[str, Any]:
    result = run(REPO, "diff", "2025-06-18", "2025-11-25", "--format", "json")
    assert result.returncode == 0, result.stderr
    loaded: dict[str, Any] = json.loads(result.stdout)
    return loaded


@pytest.fixture(scope="module")
def november_to_july() -> dict[str, Any]:
    result = run(REPO, "diff", "2025-11-25", "2026-07-28", "--format", "json")
    assert result.returncode == 0, result.stderr
    loaded: dict[str, Any] = json.loads(result.stdout)
    return loaded


def _field(diff: dict[str, Any], type_: str, name: str) -> list[dict[str, Any]]:
    return [c for c in diff["fields"] if c["type"] == type_ and c["field"] == name]


def test_2025_06_18_to_2025_11_25(june_to_november: dict[str, Any]) -> None:
    diff = june_to_november
    old, new = load_schema("2025-06-18")["definitions"], load_schema("2025-11-25")["$defs"]
    # Tasks arrive: their definitions, methods and capabilities.
    assert {"Task", "CreateTaskResult", "TaskMetadata", "ToolExecution", "Icon"} <= set(
        diff["types_added"]
    )
    assert "Task" in new and "Task" not in old
    added = {m["method"]: m for m in diff["methods_added"]}
    assert set(added) == {
        "tasks/get", "tasks/result", "tasks/list", "tasks/cancel",
        "notifications/tasks/status", "notifications/elicitation/complete",
    }  # fmt: skip
    assert added["tasks/get"]["result"] == "GetTaskResult"
    assert diff["methods_removed"] == []
    assert "ServerCapabilities.tasks.requests.tools.call" in diff["capabilities_added"]
    assert "ClientCapabilities.tasks.requests.sampling.createMessage" in diff["capabilities_added"]
    assert diff["capabilities_removed"] == []
    # JSONRPCError became JSONRPCErrorResponse.
    assert diff["types_removed"] == ["JSONRPCError"] and "JSONRPCErrorResponse" in new
    # Fields: Tool gains optional icons and execution; sampling content may be tool use.
    assert _field(diff, "Tool", "execution") == [
        {
            "type": "Tool",
            "field": "execution",
            "change": "added (optional)",
            "before": None,
            "after": "ToolExecution",
        }
    ]
    assert "execution" not in old["Tool"]["properties"] and "execution" not in new["Tool"].get(
        "required", []
    )
    assert [c["change"] for c in _field(diff, "Tool", "icons")] == ["added (optional)"]
    content = _field(diff, "CreateMessageResult", "content")[0]
    assert content["change"] == "type changed" and "ToolUseContent" in content["after"]
    assert "ToolUseContent" not in content["before"]
    arms = {u["union"]: u for u in diff["arms"]}
    assert arms["ClientRequest"]["added"] == [
        "GetTaskRequest",
        "GetTaskPayloadRequest",
        "CancelTaskRequest",
        "ListTasksRequest",
    ]
    assert arms["ClientRequest"]["removed"] == []


def test_2025_11_25_to_2026_07_28(november_to_july: dict[str, Any]) -> None:
    diff = november_to_july
    new = load_schema("2026-07-28")["$defs"]
    removed = {m["method"] for m in diff["methods_removed"]}
    assert {"initialize", "notifications/initialized", "ping"} <= removed
    added = {m["method"]: m for m in diff["methods_added"]}
    assert added["server/discover"]["result"] == "DiscoverResult"
    assert added["subscriptions/listen"]["direction"] == "client_to_server"
    assert {"InputRequiredResult", "DiscoverRequest", "JSONValue"} <= set(diff["types_added"])
    # Tool.execution went with tasks into an extension; list results gain caching hints,
    # required by the schema, with defaults for what a peer leaves out: ttlMs the one
    # the specification gives (0), cacheScope "private" (schema/corrections.toml).
    assert [c["change"] for c in _field(diff, "Tool", "execution")] == ["removed"]
    assert "execution" not in new["Tool"]["properties"]
    assert [c["change"] for c in _field(diff, "ListToolsResult", "cacheScope")] == [
        "added (optional)"
    ]
    assert "cacheScope" in new["ListToolsResult"]["required"]
    assert [c["change"] for c in _field(diff, "ListToolsResult", "ttlMs")] == ["added (optional)"]


def test_markdown_names_each_section() -> None:
    result = run(REPO, "diff", "2025-06-18", "2025-11-25")
    assert result.returncode == 0, result.stderr
    text = result.stdout
    assert text.startswith("# MCP 2025-06-18 → 2025-11-25\n")
    for heading in (
        "Types added",
        "Fields",
        "Union arms",
        "Methods added",
        "Methods removed",
        "Capabilities added",
    ):
        assert f"\n## {heading}\n" in text
    assert "- `Tool.execution` added (optional): `ToolExecution`\n" in text
    assert "- `tasks/get` (both): `GetTaskRequestParams` → `GetTaskResult`\n" in text


def test_revision_against_a_schema_file(tmp_path: Path) -> None:
    schema = tmp_path / "next.json"
    schema.write_text(json.dumps(changed_schema()))
    result = run(REPO, "diff", "2025-11-25", str(schema), "--format", "json")
    assert result.returncode == 0, result.stderr
    diff = json.loads(result.stdout)
    assert diff["after"] == "next"
    assert {"SearchResourcesRequest", "SearchResourcesResult", "ArchiveResourcesRequest"} <= set(
        diff["types_added"]
    )
    assert [m["method"] for m in diff["methods_added"]] == ["resources/archive", "resources/search"]
    assert [c["change"] for c in _field(diff, "Tool", "deprecated")] == ["added (optional)"]


def test_published_changes_are_current() -> None:
    """docs/changes/ holds the diff of each pair of consecutive released revisions."""
    pairs = [
        ("2024-11-05", "2025-03-26"),
        ("2025-03-26", "2025-06-18"),
        ("2025-06-18", "2025-11-25"),
        ("2025-11-25", "2026-07-28"),
    ]
    for before, after in pairs:
        page = REPO / "docs" / "changes" / f"{before}_to_{after}.md"
        assert page.read_text() == run(REPO, "diff", before, after).stdout, page
