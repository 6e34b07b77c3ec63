"""Echo server on this project's application layer (mcpbind.app): the
same ``echo`` tool as ours_stdio.py, written as a plain function.

``python bench/servers/app_stdio.py`` serves stdio; ``... http PORT`` serves
Streamable HTTP on 127.0.0.1:PORT/mcp. It speaks every revision, so the
2026-07-28 wire needs no flag.
"""

from __future__ import annotations

import sys

from mcpbind.app import App

app = App("bench-echo", "1.0.0")


@app.tool(description="Return the text it is given.")
def echo(text: str) -> str:
    return text


def main() -> None:
    args = [a for a in sys.argv[1:] if a != "--modern"]
    if len(args) > 1 and args[0] == "http":
        import uvicorn

        uvicorn.run(
            app.asgi(legacy_sse=False),
            host="127.0.0.1",
            port=int(args[1]),
            log_level="warning",
            access_log=False,
            workers=1,
        )
    else:
        app.run()


if __name__ == "__main__":
    main()
