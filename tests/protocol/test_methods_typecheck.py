"""Type checkers hold code to the revision's methods.

The modules in tests/protocol/typecheck/ are checked with ``mypy --strict`` (and the
repository's mypy configuration) in one run. A line marked ``# E: <code>``,
optionally followed by part of the message, must get exactly that error; every
other line of every module must be clean. The correct modules carry no marks:
a server overriding handlers with ``@override``, a client calling a stub
through a typed caller, and the same code against two revisions, which
passes for 2025-11-25 and fails for 2024-11-05.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from support.typecheck import Errors, expected_errors, mypy_strict

FIXTURES = Path(__file__).resolve().parent / "typecheck"
MODULES = sorted(FIXTURES.glob("*.py"))


@pytest.fixture(scope="module")
def mypy_errors(tmp_path_factory: pytest.TempPathFactory) -> Errors:
    """mypy's errors, by fixture file name and line: (code, message)."""
    return mypy_strict(MODULES, tmp_path_factory.mktemp("mypy-cache"))


def test_fixtures_are_there() -> None:
    names = {p.name for p in MODULES}
    assert {
        "server_ok.py",
        "client_ok.py",
        "revision_2024_11_05.py",
        "revision_2025_11_25.py",
    } <= names
    assert sum(1 for p in MODULES if expected_errors(p)) >= 5


@pytest.mark.parametrize("path", MODULES, ids=[p.stem for p in MODULES])
def test_mypy_reports_exactly_the_marked_errors(
    path: Path, mypy_errors: dict[str, dict[int, list[tuple[str, str]]]]
) -> None:
    found = mypy_errors.get(path.name, {})
    expected = expected_errors(path)
    assert sorted(found) == sorted(
        expected
    ), f"errors on lines {sorted(found)}, marked {sorted(expected)}: {found}"
    for line, (code, text) in expected.items():
        codes = [c for c, _ in found[line]]
        assert codes == [code], (line, found[line])
        if text:
            assert text in found[line][0][1], (line, found[line][0][1])


def test_override_of_a_missing_method_is_named() -> None:
    """The message the brief promises for a handler the revision does not have."""
    marks = expected_errors(FIXTURES / "client_no_such_method.py")
    assert any(
        text and "marked as an override, but no base method was found" in text
        for _, text in marks.values()
    )


# ------------------------------------------------------------------ the correct modules also run


def _load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"typecheck_{name}", FIXTURES / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class _Context:
    request_id = 1
    protocol_version = "2025-11-25"

    def __init__(self) -> None:
        self.progress: list[float] = []

    async def report_progress(
        self, progress: float, total: float | None = None, message: str | None = None
    ) -> None:
        self.progress.append(progress)


def test_client_module_runs() -> None:
    client = _load("client_ok")
    text, names, tasks, sent = asyncio.run(client.demo())
    assert (text, names, tasks) == ("hi", ["echo", "add"], 0)
    assert sent == [
        "notifications/roots/list_changed",
        "tools/call",
        "tools/list",
        "tools/list",
        "tasks/list",
    ]


def test_server_module_runs() -> None:
    from mcpbind.codec import encode
    from mcpbind_protocol.v2025_11_25 import (
        CallToolRequestParams,
        PaginatedRequestParams,
        ReadResourceRequestParams,
    )

    server = _load("server_ok").EchoServer()
    ctx: Any = _Context()
    called = asyncio.run(
        server.call_tool(CallToolRequestParams(name="echo", arguments={"text": "x"}), ctx)
    )
    assert called.content[0].text == "echo: {'text': 'x'}" and ctx.progress == [1.0]
    listed = asyncio.run(server.list_tools(PaginatedRequestParams(), ctx))
    assert json.loads(encode(listed)) == {
        "tools": [
            {
                "name": "echo",
                "inputSchema": {
                    "type": "object",
                    "properties": {"text": {"type": "string"}},
                    "required": ["text"],
                },
            }
        ]
    }
    read = asyncio.run(server.read_resource(ReadResourceRequestParams(uri="file:///a"), ctx))
    assert json.loads(encode(read)) == {"contents": [{"uri": "file:///a", "text": "hello"}]}
