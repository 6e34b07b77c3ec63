"""A stdio app imports no module of the HTTP server or client: serving over stdio
loads neither ``mcpbind.http`` (nor the ASGI glue around it) nor uvicorn,
aiohttp, httptools or httpx. The app runs in its own process, answers one
``tools/call`` over stdio, and its tool reports the modules loaded by then."""

from __future__ import annotations

import sys
from pathlib import Path

from support.peers import run
from support.rawstdio import LATEST, RawServer

APP = '''
import sys

from mcpbind import App

app = App("lean", "1")


@app.tool()
def loaded() -> list[str]:
    """The modules this process has imported."""
    return sorted(sys.modules)


app.run("stdio")
'''

# The HTTP server and client, and the ASGI glue only they use.
HTTP_MODULES = (
    "mcpbind.http",
    "mcpbind._transports.http.asgi",
    "mcpbind._transports.http.disconnect",
    "mcpbind.serving",
)
HTTP_LIBRARIES = ("uvicorn", "aiohttp", "httptools", "httpx", "h11", "starlette", "granian")


def is_http(module: str) -> bool:
    return any(module == name or module.startswith(name + ".") for name in HTTP_MODULES) or (
        module.split(".")[0] in HTTP_LIBRARIES
    )


async def modules_of_a_stdio_app(script: Path) -> list[str]:
    server = await RawServer.start([sys.executable, str(script)])
    try:
        hello = {
            "protocolVersion": LATEST,
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "0"},
        }
        await server.send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": hello})
        # Generous: the first answer waits for the child's imports on a loaded machine.
        assert "result" in await server.response(1, timeout=60.0)
        await server.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        call = {"name": "loaded", "arguments": {}}
        await server.send({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": call})
        answer = await server.response(2, timeout=60.0)
        assert "result" in answer, answer
        result = answer["result"]
        assert not result.get("isError"), result
        modules: list[str] = result["structuredContent"]["result"]
        return modules
    finally:
        await server.close()


def test_a_stdio_app_imports_no_http_module(tmp_path: Path) -> None:
    script = tmp_path / "stdio_app.py"
    script.write_text(APP)
    modules = run(modules_of_a_stdio_app(script))
    assert "mcpbind._transports.stdio" in modules  # the report is from the serving process
    assert [module for module in modules if is_http(module)] == []
