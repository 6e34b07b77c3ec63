"""A long-lived client for the mcpx dev tests: a host of one stdio server
(the command given as arguments) that prints its tool names at every change
of the list, and the result of calling the tool ``version`` each time."""

from __future__ import annotations

import asyncio
import sys

from mcpbind.host import Host, HostHandlers


class Printer(HostHandlers):
    def __init__(self) -> None:
        self.host: Host | None = None

    async def on_list_changed(self, server: str, kind: str) -> None:
        if kind == "tools" and self.host is not None:
            await show(self.host)


async def show(host: Host) -> None:
    names = sorted(tool.original for tool in host.tools)
    print("tools:", ", ".join(names), flush=True)
    if "version" in names:
        result = await host.call_tool("dev_version")
        print("version:", result.content[0].text, flush=True)


async def main(command: list[str]) -> None:
    printer = Printer()
    config = {"mcpServers": {"dev": {"command": command[0], "args": command[1:]}}}
    async with Host(config, printer) as host:
        printer.host = host
        await show(host)
        await asyncio.Event().wait()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:]))
