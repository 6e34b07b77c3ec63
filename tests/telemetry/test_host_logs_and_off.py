"""A Host's span per routed call; trace ids in log records; and telemetry off:
the runtime neither imports OpenTelemetry nor needs it."""

from __future__ import annotations

import logging
import subprocess
import sys
import textwrap
from typing import Any

import pytest
from opentelemetry.trace import SpanKind
from support.http_servers import serving
from support.peers import THIS_TREE, run
from support.telemetry import (
    metric_reader,  # noqa: F401  (a fixture)
    spans,  # noqa: F401  (a fixture)
    telemetry,  # noqa: F401  (a fixture)
)

from mcpbind._client.client import Client
from mcpbind.app import App
from mcpbind.host import Host
from mcpbind.telemetry import Telemetry
from mcpbind_protocol import v2025_11_25


def test_a_host_call_has_a_span_naming_the_server_entry_around_its_client_span(
    spans: Any, telemetry: Telemetry
) -> None:
    app: App = App("backend", telemetry=telemetry)

    @app.tool()
    def hello() -> str:
        """Greet."""
        return "hello"

    with serving(app.asgi()) as server:
        config = {"mcpServers": {"notes": {"url": f"http://127.0.0.1:{server.port}/mcp"}}}

        async def main() -> None:
            async with Host(config, telemetry=telemetry) as host:
                result = await host.call_tool("notes_hello", {})
                assert result.content[0].text == "hello"

        run(main())
    finished = spans.get_finished_spans()
    routed = [s for s in finished if s.name == "notes: tools/call hello"]
    assert len(routed) == 1 and routed[0].kind == SpanKind.INTERNAL
    assert routed[0].attributes["mcp.host.server"] == "notes"
    sent = [s for s in finished if s.name == "tools/call hello" and s.kind == SpanKind.CLIENT]
    served = [s for s in finished if s.name == "tools/call hello" and s.kind == SpanKind.SERVER]
    assert sent[0].parent.span_id == routed[0].context.span_id
    assert served[0].parent.span_id == sent[0].context.span_id


def test_log_records_made_in_a_span_carry_its_trace_and_span_ids(
    spans: Any, telemetry: Telemetry, caplog: pytest.LogCaptureFixture
) -> None:
    app: App = App("logging", telemetry=telemetry)
    logger = logging.getLogger("mcpbind.tests.telemetry")

    @app.tool()
    def noisy() -> str:
        """Logs a line."""
        logger.warning("inside the tool")
        return "ok"

    client = Client(name="c", version="1", protocol_version="2025-11-25")

    async def main() -> None:
        async with app.test_client(client=client) as session:
            await v2025_11_25.ClientStub(session).call_tool("noisy", arguments={})

    with caplog.at_level(logging.WARNING, logger="mcpbind.tests.telemetry"):
        run(main())
    record = next(r for r in caplog.records if r.getMessage() == "inside the tool")
    served = next(s for s in spans.get_finished_spans() if s.name == "tools/call noisy")
    assert record.otelTraceID == format(served.context.trace_id, "032x")
    assert record.otelSpanID == format(served.context.span_id, "016x")


OFF = textwrap.dedent("""
    import asyncio, importlib.abc, sys

    class NoOpenTelemetry(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path, target=None):
            if name == "opentelemetry" or name.startswith("opentelemetry."):
                raise ImportError(f"{name} is not installed")
            return None

    sys.meta_path.insert(0, NoOpenTelemetry())
    from mcpbind_protocol import v2025_11_25
    from mcpbind.app import App
    from mcpbind._client.client import Client
    import mcpbind.host, mcpbind._server.server, mcpbind._transports.http.server.app

    app = App("plain")

    @app.tool()
    def echo(text: str) -> str:
        "Say it back."
        return text

    async def main():
        client = Client(name="c", version="1", protocol_version="2025-11-25")
        async with app.test_client(client=client) as session:
            result = await v2025_11_25.ClientStub(session).call_tool("echo", arguments={"text": "hi"})
            assert result.content[0].text == "hi"

    asyncio.run(main())
    assert not [m for m in sys.modules if m.startswith("opentelemetry")]
    print("served")
    """)


def test_without_opentelemetry_installed_the_runtime_serves_and_never_imports_it() -> None:
    """Off means free: the ``otel`` extra is optional, and nothing of it is
    imported by a runtime given no ``Telemetry``."""
    done = subprocess.run(
        [sys.executable, "-c", OFF], env=THIS_TREE, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "served"
