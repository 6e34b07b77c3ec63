"""Echo server on the official Python SDK (mcp 2.3.0, MCPServer): one tool,
``echo``, returning its ``text`` argument as one text content block.

``python bench/servers/sdk_stdio.py`` serves stdio; ``... http PORT`` serves
Streamable HTTP on 127.0.0.1:PORT/mcp with uvicorn (one worker), the same way
``MCPServer.run("streamable-http")`` does but with access logging off, as for
our server.
"""

from __future__ import annotations

import sys

from mcp.server.mcpserver import MCPServer

mcp = MCPServer("bench-echo", version="1.0.0", log_level="WARNING")


@mcp.tool(description="Return the text it is given.", structured_output=False)
def echo(text: str) -> str:
    return text


def main() -> None:
    if len(sys.argv) > 2 and sys.argv[1] == "http":
        import uvicorn

        app = mcp.streamable_http_app(host="127.0.0.1")
        uvicorn.run(
            app,
            host="127.0.0.1",
            port=int(sys.argv[2]),
            log_level="warning",
            access_log=False,
            workers=1,
        )
    else:
        mcp.run()


if __name__ == "__main__":
    main()
