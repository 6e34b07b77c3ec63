"""Taking an awaitable's first step by hand (mcpbind._core.stepping), and the
request bodies read that way (limits.BodyBudget): what is ready costs no
wait, and what has to wait is awaited as it would be, cancellation included."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import Any, cast

import pytest
from support.http_servers import eventually
from support.peers import run

from mcpbind._core.limits import BodyBudget, BodyRefused
from mcpbind._core.stepping import Pending, one_pass, resumed, step


def test_what_is_ready_is_given_at_once() -> None:
    async def ready() -> str:
        return "now"

    async def main() -> None:
        assert step(ready()) == "now"
        done: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        done.set_result("set")
        assert step(done) == "set"

    run(main())


def test_what_waits_is_carried_on_from_where_it_stopped() -> None:
    async def main() -> None:
        release: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        seen: list[str] = []

        async def waits() -> str:
            seen.append("first step")
            value = await release
            await asyncio.sleep(0)  # a bare yield to the loop
            return value + " and done"

        pending = step(waits())
        assert isinstance(pending, Pending) and seen == ["first step"]
        asyncio.get_running_loop().call_soon(release.set_result, "released")
        assert await pending.rest() == "released and done"
        assert seen == ["first step"]  # never stepped twice

    run(main())


class BareAwaitable:
    """An awaitable whose ``__await__`` is a bare iterator (no send, no throw),
    as an ASGI server written in Rust hands out: it waits on ``future``."""

    def __init__(self, future: asyncio.Future[str]) -> None:
        self.future = future

    def __await__(self) -> BareAwaitable:
        return self

    def __iter__(self) -> BareAwaitable:
        return self

    def __next__(self) -> Any:
        if not self.future.done():
            self.future._asyncio_future_blocking = True  # as Future.__await__ does
            return self.future  # what the task waits on
        raise StopIteration(self.future.result())


def bare(future: asyncio.Future[str]) -> Awaitable[str]:
    return cast(Awaitable[str], BareAwaitable(future))


def test_a_bare_iterator_is_stepped_and_carried_on_as_await_would() -> None:
    async def main() -> None:
        future: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        pending = step(bare(future))
        assert isinstance(pending, Pending)
        asyncio.get_running_loop().call_soon(future.set_result, "arrived")
        assert await pending.rest() == "arrived"
        assert step(bare(future)) == "arrived"
        # A cancellation cannot be thrown into it: it is raised where it waits.
        waiting = step(bare(asyncio.get_running_loop().create_future()))
        assert isinstance(waiting, Pending)
        task = asyncio.get_running_loop().create_task(_await(waiting.rest()))
        await asyncio.sleep(0)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    run(main())


def test_a_handler_resumed_after_its_first_step_gets_what_its_task_gets() -> None:
    """A coroutine stepped by hand once (a 2026-07-28 handler's first step,
    taken before any wait is set up for it) and carried on by resumed gets
    results, bare yields and cancellations as it would by await."""

    async def main() -> None:
        seen: list[str] = []
        release: asyncio.Future[str] = asyncio.get_running_loop().create_future()

        async def handler() -> None:
            seen.append("first step")
            await release
            seen.append(release.result())
            await asyncio.sleep(0)  # a bare yield to the loop
            try:
                await asyncio.sleep(30)
            except asyncio.CancelledError:
                seen.append("cancelled")
                raise

        coroutine = handler()
        waiting_on = coroutine.send(None)
        assert seen == ["first step"] and waiting_on is release

        async def carried() -> None:
            await resumed(coroutine, waiting_on)

        task = asyncio.get_running_loop().create_task(carried())
        release.set_result("released")
        await eventually(lambda: seen[-1:] == ["released"], what="the handler to go on")
        await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert seen == ["first step", "released", "cancelled"]

    run(main())


def test_one_pass_lets_what_is_ready_run_once_as_sleep_0_does() -> None:
    async def main() -> None:
        ran: list[str] = []
        loop = asyncio.get_running_loop()
        loop.call_soon(ran.append, "ready")
        await one_pass()
        assert ran == ["ready"]
        # What the first pass makes ready runs on the next, not within it.
        loop.call_soon(lambda: loop.call_soon(ran.append, "later"))
        await one_pass()
        assert ran == ["ready"]
        await one_pass()
        assert ran == ["ready", "later"]

        async def waits_one_pass() -> str:
            await one_pass()
            return "done"

        pending = step(waits_one_pass())
        assert isinstance(pending, Pending)  # it waits: no result yet
        assert await pending.rest() == "done"

    run(main())


async def _await(awaitable: Any) -> Any:
    return await awaitable


def test_a_body_that_has_arrived_is_read_without_a_deadline() -> None:
    async def main() -> None:
        budget = BodyBudget(1024, timeout=0.05)
        messages: list[dict[str, Any]] = [
            {"type": "http.request", "body": b"ab", "more_body": True},
            {"type": "http.request", "body": b"cd"},
        ]

        async def receive() -> dict[str, Any]:
            return messages.pop(0)

        assert await budget.read(receive, 100) == b"abcd"
        assert budget._watch is None and budget.buffered == 0  # no deadline was set

    run(main())


def test_a_body_that_stops_coming_gets_its_deadline() -> None:
    async def main() -> None:
        budget = BodyBudget(1024, timeout=0.05)
        first = True

        async def receive() -> dict[str, Any]:
            nonlocal first
            if first:
                first = False
                return {"type": "http.request", "body": b"ab", "more_body": True}
            await asyncio.sleep(30)  # the rest never comes
            return {"type": "http.request", "body": b""}

        with pytest.raises(BodyRefused) as refused:
            await budget.read(receive, 100)
        assert refused.value.status == 408 and budget.buffered == 0

    run(main())
