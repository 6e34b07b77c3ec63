"""The gateway's audit trail: every proxied call written as one JSON line (who,
backend, name, outcome, duration), arguments only when configured."""

from __future__ import annotations

import asyncio
import json
import logging
import sys
from pathlib import Path

import pytest
from support.peers import (
    SUPPORT,
    THIS_TREE,
    no_leaked_processes,  # noqa: F401  (a fixture)
    run,
)

from mcpbind._core import jsonrpc
from mcpbind._core.jsonrpc import McpError
from mcpbind._transports.stdio import StdioServerParameters
from mcpbind.app import App, Audit
from mcpbind.auth._principal import Principal
from mcpbind_protocol import v2025_11_25 as legacy

pytestmark = pytest.mark.usefixtures("no_leaked_processes")

WAIT = 30.0  # a deadline against hanging, not a measure: the awaited event comes much sooner


def shifting() -> StdioServerParameters:
    return StdioServerParameters(
        sys.executable,
        [str(SUPPORT / "shifting_server.py")],
        env=THIS_TREE,
        stderr=asyncio.subprocess.DEVNULL,
    )


def test_every_proxied_call_is_one_json_line_with_who_backend_name_outcome_and_duration(
    tmp_path: Path,
) -> None:
    trail = tmp_path / "audit.jsonl"
    app = App("gateway")
    app.proxy(shifting(), prefix="shifting", audit=Audit(trail))
    alice = Principal("alice", client_id="desk", scopes=frozenset({"tools"}))

    async def main() -> None:
        async with app.test_client(protocol_version="2025-11-25", principal=alice) as session:
            stub = legacy.ClientStub(session)
            await stub.list_tools()
            await stub.call_tool("shifting_stable", arguments={"text": "secret words"})
            await stub.get_prompt("shifting_greet", arguments={"name": "Ada"})
            failed = await stub.call_tool("shifting_convert", arguments={})  # amount missing
            assert failed.is_error

    run(main())
    records = [json.loads(line) for line in trail.read_text().splitlines()]
    assert [(r["method"], r["name"]) for r in records] == [
        ("tools/call", "stable"),
        ("prompts/get", "greet"),
        ("tools/call", "convert"),
    ]
    for record in records:
        assert record["who"] == "principal:sub:alice"
        assert record["client"] == "test-client 0"
        assert record["backend"] == "shifting"
        assert record["time"].endswith("Z") and record["durationMs"] >= 0
        assert "arguments" not in record
    assert [r["outcome"] for r in records] == ["ok", "ok", "error"]
    assert "secret words" not in trail.read_text()


def test_arguments_are_written_only_when_configured_and_a_logger_can_take_the_lines(
    caplog: pytest.LogCaptureFixture,
) -> None:
    audit_logger = logging.getLogger("tests.audit")
    app = App("gateway")
    app.proxy(shifting(), prefix="shifting", audit=Audit(logger=audit_logger, arguments=True))

    async def main() -> None:
        async with app.test_client(protocol_version="2025-11-25") as session:
            stub = legacy.ClientStub(session)
            await stub.call_tool("shifting_stable", arguments={"text": "kept"})

    with caplog.at_level(logging.INFO, logger="tests.audit"):
        run(main())
    lines = [record.getMessage() for record in caplog.records if record.name == "tests.audit"]
    assert len(lines) == 1
    record = json.loads(lines[0])
    assert record["who"] == "local" and record["outcome"] == "ok"
    assert record["arguments"] == {"text": "kept"}


def test_a_call_the_backend_refuses_is_written_as_refused_with_its_code(tmp_path: Path) -> None:
    trail = tmp_path / "audit.jsonl"
    app = App("gateway")
    app.proxy(shifting(), prefix="shifting", audit=Audit(trail))

    async def main() -> None:
        async with app.test_client(protocol_version="2025-11-25") as session:
            stub = legacy.ClientStub(session)
            with pytest.raises(McpError) as refused:
                await stub.get_prompt("shifting_greet", arguments={})  # name missing
            assert refused.value.code == jsonrpc.INVALID_PARAMS

    run(main())
    (record,) = [json.loads(line) for line in trail.read_text().splitlines()]
    assert (record["method"], record["name"], record["outcome"]) == (
        "prompts/get",
        "greet",
        "refused",
    )
    assert record["code"] == jsonrpc.INVALID_PARAMS and "name" in record["error"]


def test_a_call_the_front_client_cancels_is_written_as_cancelled(tmp_path: Path) -> None:
    trail = tmp_path / "audit.jsonl"
    app = App("gateway")
    backend = StdioServerParameters(
        sys.executable,
        [str(SUPPORT / "reliability_server.py"), "stdio"],
        env=THIS_TREE,
        stderr=asyncio.subprocess.DEVNULL,
    )
    app.proxy(backend, prefix="r", audit=Audit(trail))

    async def main() -> None:
        async with app.test_client(protocol_version="2025-11-25") as session:
            stub = legacy.ClientStub(session)
            started = asyncio.Event()

            async def progress(value: float, total: float | None, message: str | None) -> None:
                started.set()

            # The first of two progress notifications, then a pause the call never sees the end of.
            call = asyncio.ensure_future(
                stub.call_tool(
                    "r_numbered", arguments={"count": 2, "pause": 600}, on_progress=progress
                )
            )
            async with asyncio.timeout(WAIT):
                await started.wait()
            call.cancel()
            with pytest.raises(asyncio.CancelledError):
                await call
            async with asyncio.timeout(WAIT):
                while not trail.exists() or "cancelled" not in trail.read_text():
                    await asyncio.sleep(0.05)
            echoed = await stub.call_tool("r_echo", arguments={"text": "after"})
            assert not echoed.is_error

    run(main())
    records = [json.loads(line) for line in trail.read_text().splitlines()]
    assert [(r["name"], r["outcome"]) for r in records] == [
        ("numbered", "cancelled"),
        ("echo", "ok"),
    ]
    assert "code" not in records[0] and records[0]["durationMs"] >= 0


def test_a_call_the_backend_does_not_answer_in_time_is_written_as_failed(tmp_path: Path) -> None:
    trail = tmp_path / "audit.jsonl"
    app = App("gateway")
    entry = {
        "command": sys.executable,
        "args": [str(SUPPORT / "reliability_server.py"), "stdio"],
        "env": THIS_TREE,
        "requestTimeout": 1,
    }
    app.proxy(entry, prefix="r", audit=Audit(trail))

    async def main() -> None:
        async with app.test_client(protocol_version="2025-11-25") as session:
            stub = legacy.ClientStub(session)
            with pytest.raises(McpError) as failed:
                await stub.call_tool("r_slow", arguments={"seconds": 600, "token": "t"})
            assert failed.value.code == jsonrpc.REQUEST_TIMEOUT

    run(main())
    (record,) = [json.loads(line) for line in trail.read_text().splitlines()]
    assert (record["name"], record["outcome"]) == ("slow", "failed")
    assert record["code"] == jsonrpc.REQUEST_TIMEOUT and "'r'" in record["error"]
