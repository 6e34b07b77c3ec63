"""Echo server on the official Python SDK (mcp 2.3.0, MCPServer): one tool,
``echo``, returning its ``text`` argument as one text content block.

``mcp`` is the SDK's fastest equivalent of our server: the tool is an ``async
def``, run on the event loop as ours is. ``mcp_def`` is the same tool as a plain
``def``, which MCPServer runs in a worker thread (one thread hop per call): the
configuration of the SDK's own examples, kept as a second row.

``python bench/servers/sdk_stdio.py [--def-tool]`` serves stdio; ``... http
PORT`` serves Streamable HTTP on 127.0.0.1:PORT/mcp with uvicorn (one worker),
the same way ``MCPServer.run("streamable-http")`` does but with access logging
off, as for our server.
"""

from __future__ import annotations

import sys

from mcp.server.mcpserver import MCPServer

mcp = MCPServer("bench-echo", version="1.0.0", log_level="WARNING")
mcp_def = MCPServer("bench-echo", version="1.0.0", log_level="WARNING")


@mcp.tool(description="Return the text it is given.", structured_output=False)
async def echo(text: str) -> str:
    return text


@mcp_def.tool(name="echo", description="Return the text it is given.", structured_output=False)
def echo_in_a_thread(text: str) -> str:
    return text


def main() -> None:
    server = mcp_def if "--def-tool" in sys.argv else mcp
    args = [a for a in sys.argv[1:] if a != "--def-tool"]
    if len(args) > 1 and args[0] == "http":
        import uvicorn

        app = server.streamable_http_app(host="127.0.0.1")
        uvicorn.run(
            app,
            host="127.0.0.1",
            port=int(args[1]),
            log_level="warning",
            access_log=False,
            workers=1,
        )
    else:
        server.run()


if __name__ == "__main__":
    main()
