"""A server whose one resource, ``ticker://count``, changes on its own: once
read, it counts up and tells its subscribers after each step (for mcpx watch)."""

from __future__ import annotations

import asyncio

from mcpbind.app import App

app = App("ticker", "1")
state = {"count": 0}
ticking: set[asyncio.Task[None]] = set()


async def tick() -> None:
    while True:
        await asyncio.sleep(0.2)
        state["count"] += 1
        await app.notify_resource_updated("ticker://count")


@app.resource("ticker://count", mime_type="text/plain")
def count() -> str:
    """The count so far."""
    if not ticking:
        task = asyncio.get_running_loop().create_task(tick())
        ticking.add(task)
    return str(state["count"])


if __name__ == "__main__":
    app.run()
