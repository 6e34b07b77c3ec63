"""How the HTTP transports notice that a client has gone (mcpbind._transports.http.disconnect):
a watch of a quick answer never calls receive(), a slow one is watched after
the grace, and a disconnect wakes whoever waits for the next event."""

from __future__ import annotations

import asyncio
import gc
from typing import Any

from mcpbind._transports.http.disconnect import GONE, ClientWatch, SlowAnswers, next_or_gone

GRACE = 0.05


class Connection:
    """An ASGI receive() whose body is read: it returns once the client leaves."""

    def __init__(self) -> None:
        self.calls = 0
        self.left = asyncio.Event()

    async def receive(self) -> dict[str, Any]:
        self.calls += 1
        await self.left.wait()
        return {"type": "http.disconnect"}


def test_a_quick_answer_never_waits_on_receive() -> None:
    async def main() -> None:
        slow = SlowAnswers(GRACE)
        connection = Connection()
        watches = [ClientWatch(connection.receive, slow) for _ in range(100)]
        for watch in watches:
            watch.close()
        await asyncio.sleep(3 * GRACE)
        assert connection.calls == 0

    asyncio.run(main())


def test_a_slow_answer_is_watched_after_the_grace() -> None:
    async def main() -> None:
        slow = SlowAnswers(GRACE)
        connection = Connection()
        watch = ClientWatch(connection.receive, slow)
        gone: list[bool] = []
        watch.add_callback(lambda: gone.append(True))
        await asyncio.sleep(GRACE / 2)
        assert connection.calls == 0
        await asyncio.sleep(2 * GRACE)  # at most two grace periods after it was added
        assert connection.calls == 1 and not watch.gone
        connection.left.set()
        await asyncio.sleep(0.01)
        assert watch.gone and gone == [True]
        watch.close()

    asyncio.run(main())


def test_next_or_gone_returns_what_is_queued_then_gone() -> None:
    async def main() -> None:
        connection = Connection()
        watch = ClientWatch(connection.receive)  # long-lived: watched at once
        queue: asyncio.Queue[int] = asyncio.Queue()
        queue.put_nowait(1)
        assert await next_or_gone(queue, watch) == 1
        waiting = asyncio.ensure_future(next_or_gone(queue, watch))
        await asyncio.sleep(0.01)
        connection.left.set()
        assert await asyncio.wait_for(waiting, 1) is GONE
        queue.put_nowait(2)  # what was queued stays first, even for a gone client
        assert await next_or_gone(queue, watch) == 2
        assert await next_or_gone(queue, watch) is GONE
        watch.close()

    asyncio.run(main())


def test_closed_watches_leave_no_reference_cycles() -> None:
    async def main() -> None:
        slow = SlowAnswers(GRACE)
        connection = Connection()
        gc.collect()
        gc.disable()
        try:
            for _ in range(50):
                ClientWatch(connection.receive, slow).close()
                started = ClientWatch(connection.receive)
                await asyncio.sleep(0)
                started.close()
            await asyncio.sleep(0.01)
        finally:
            found = gc.collect()
            gc.enable()
        assert found == 0

    asyncio.run(main())


def test_watches_left_by_a_closed_loop_are_not_started_on_the_next() -> None:
    slow = SlowAnswers(GRACE)
    first = Connection()

    async def abandoned() -> None:
        ClientWatch(first.receive, slow)  # never closed: its loop ends first

    async def later() -> None:
        connection = Connection()
        watch = ClientWatch(connection.receive, slow)
        await asyncio.sleep(3 * GRACE)
        assert connection.calls == 1 and first.calls == 0
        watch.close()

    asyncio.run(abandoned())
    asyncio.run(later())
