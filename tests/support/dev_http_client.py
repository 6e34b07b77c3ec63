"""A long-lived HTTP client for the mcpx dev --http test: a host of the server
at the URL given (at the revision given, if one is), calling its tool
``version`` again and again and printing each answer that differs from the
last, and each failure while the server restarts, once."""

from __future__ import annotations

import asyncio
import sys

from mcpbind.host import Host, HostHandlers


async def main(url: str, revision: str | None) -> None:
    config = {"mcpServers": {"dev": {"url": url}}}
    shown = None
    async with Host(config, HostHandlers(), protocol_version=revision) as host:
        while True:
            try:
                result = await host.request(
                    "dev", "tools/call", {"name": "version", "arguments": {}}, timeout=10
                )
                line = f"version: {result.content[0].text}"
            except Exception as error:  # the server restarting: said once, then tried again
                line = f"failed: {type(error).__name__}"
            if line != shown:
                print(line, flush=True)
                shown = line
            await asyncio.sleep(0.1)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else None))
