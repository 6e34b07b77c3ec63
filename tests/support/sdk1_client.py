"""A client of the official Python SDK 1.x over Streamable HTTP, run by the python of
an older SDK's venv (support/old_sdk.py): it imports nothing of this repository.

``python sdk1_client.py URL`` initializes (the SDK's latest revision: 2025-06-18 for
1.x), lists the tools, calls ``echo`` (answered at once), ``count`` (progress and
logs, streamed) and ``sleep`` (answered late), waits for the standalone GET stream
the SDK opens to carry a message, and prints what it got as one JSON line. The
SDK's own log records (warnings and errors, with their tracebacks) go to stderr.
"""

from __future__ import annotations

import asyncio
import json
import logging
import sys
from typing import Any

from mcp import ClientSession, types
from mcp.client.streamable_http import streamablehttp_client


async def main(url: str) -> dict[str, Any]:
    changed = asyncio.Event()

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ServerNotification) and isinstance(
            message.root, types.ToolListChangedNotification
        ):
            changed.set()

    async with streamablehttp_client(url) as (read, write, _):
        async with ClientSession(read, write, message_handler=on_message) as session:
            initialized = await session.initialize()
            tools = await session.list_tools()
            echo = await session.call_tool("echo", {"text": "hi"})
            counted = await session.call_tool("count", {"steps": 3})
            slept = await session.call_tool("sleep", {"seconds": 0.2})
            # The server announces a change of its tools on the GET stream.
            await session.call_tool("announce", {})
            await asyncio.wait_for(changed.wait(), 30)
            return {
                "version": initialized.protocolVersion,
                "tools": sorted(tool.name for tool in tools.tools),
                "texts": [
                    block.text
                    for result in (echo, counted, slept)
                    for block in result.content
                    if isinstance(block, types.TextContent)
                ],
                "announced": changed.is_set(),
            }


if __name__ == "__main__":
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    print(json.dumps(asyncio.run(main(sys.argv[1]))), flush=True)
