"""The session loop over an in-memory message stream: ids, concurrency in both
directions, notifications, errors, timeouts, cancellation, progress, ping and
shutdown. No processes: both ends run on one event loop."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import warnings
from collections import defaultdict
from collections.abc import AsyncIterator
from typing import Any

import msgspec
import pytest
from support.peers import run
from support.router import NOTE, UNROUTED, WORK, Done, Note, TableRouter, Work
from support.transports import MemoryTransport, Message, memory_pair

from mcpbind._core import jsonrpc
from mcpbind._core.jsonrpc import ConnectionClosed, McpError
from mcpbind._core.session import Session, SessionContext
from mcpbind.methods import HandlerNotImplemented
from mcpbind_protocol.v2025_11_25 import EmptyResult
from mcpbind_protocol.v2025_11_25 import methods as v2025


class Worker:
    """The handlers of one end: ``test/work`` and ``test/note``, observable and steerable."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.router = TableRouter()
        self.router.add(WORK, self.work)
        self.router.add(NOTE, self.on_note)
        self.started: defaultdict[int, asyncio.Event] = defaultdict(asyncio.Event)
        self.release: defaultdict[int, asyncio.Event] = defaultdict(asyncio.Event)
        self.cancelled: defaultdict[int, asyncio.Event] = defaultdict(asyncio.Event)
        self.notes: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()
        self.running = 0
        self.most_running = 0
        self.request_ids: dict[int, Any] = {}

    async def work(self, params: Work, ctx: SessionContext) -> Done:
        self.request_ids[params.value] = ctx.request_id
        self.running += 1
        self.most_running = max(self.most_running, self.running)
        self.started[params.value].set()
        try:
            for step in range(1, params.steps + 1):
                await ctx.report_progress(step, params.steps, f"{params.value}:{step}")
                await asyncio.sleep(0)  # let the other calls interleave
            if params.block:
                await self.release[params.value].wait()
        except asyncio.CancelledError:
            self.cancelled[params.value].set()
            raise
        finally:
            self.running -= 1
        if params.error_code:
            raise McpError(params.error_code, f"refused {params.value}", {"value": params.value})
        if params.crash:
            raise RuntimeError(f"secret internals of {self.name}")
        return Done(value=params.value * 2, by=self.name)

    async def on_note(self, params: Note, ctx: SessionContext) -> None:
        self.notes.put_nowait((params.text, ctx.request_id))


class Ends:
    def __init__(
        self,
        a: Session,
        b: Session,
        wa: Worker,
        wb: Worker,
        ta: MemoryTransport,
        tb: MemoryTransport,
    ) -> None:
        self.a, self.b, self.wa, self.wb, self.ta, self.tb = a, b, wa, wb, ta, tb


@contextlib.asynccontextmanager
async def connected(default_timeout: float | None = None) -> AsyncIterator[Ends]:
    """Two sessions ``a`` and ``b`` talking to each other; both closed on exit."""
    ta, tb = memory_pair("a", "b")
    wa, wb = Worker("a"), Worker("b")
    a = Session(ta, wa.router, protocol_version="test", default_timeout=default_timeout)
    b = Session(tb, wb.router, protocol_version="test", default_timeout=default_timeout)
    a.start()
    b.start()
    try:
        yield Ends(a, b, wa, wb, ta, tb)
    finally:
        await a.close()
        await b.close()


@contextlib.asynccontextmanager
async def session_and_wire() -> AsyncIterator[tuple[Session, Worker, MemoryTransport]]:
    """A session whose peer is the test itself, writing raw messages."""
    wire, end = memory_pair("test", "session")
    worker = Worker("session")
    session = Session(end, worker.router, protocol_version="test")
    session.start()
    try:
        yield session, worker, wire
    finally:
        await session.close()


def requests_of(messages: list[Message], method: str) -> list[Message]:
    return [m for m in messages if m.get("method") == method and "id" in m]


def responses_to(messages: list[Message], request_id: Any) -> list[Message]:
    return [m for m in messages if "method" not in m and m.get("id") == request_id]


def cancellations(messages: list[Message]) -> list[Message]:
    return [m for m in messages if m.get("method") == "notifications/cancelled"]


# ------------------------------------------------------------------ ids and concurrency


def test_request_ids_count_up_and_responses_are_matched_by_id() -> None:
    async def scenario() -> None:
        async with connected() as e:
            calls = [
                asyncio.create_task(e.a.request(WORK, Work(value=v, block=True))) for v in (1, 2, 3)
            ]
            for v in (1, 2, 3):
                await e.wb.started[v].wait()
            # Answer in the reverse order of asking.
            for v in (3, 2, 1):
                e.wb.release[v].set()
                await e.tb.wait_sent(lambda m, v=v: m.get("result", {}).get("value") == v * 2)
            results = await asyncio.gather(*calls)
            assert [r.value for r in results] == [2, 4, 6]
            assert all(isinstance(r, Done) and r.by == "b" for r in results)

            sent = requests_of(e.ta.sent_messages(), "test/work")
            assert [m["id"] for m in sent] == [1, 2, 3]
            assert [m["params"]["value"] for m in sent] == [1, 2, 3]
            answered = [m for m in e.tb.sent_messages() if "result" in m]
            assert [(m["id"], m["result"]["value"]) for m in answered] == [(3, 6), (2, 4), (1, 2)]
            assert e.wb.request_ids == {1: 1, 2: 2, 3: 3}
            # Each side numbers its own requests.
            assert (await e.b.request(WORK, Work(value=7))).value == 14
            assert requests_of(e.tb.sent_messages(), "test/work")[0]["id"] == 1

    run(scenario(), timeout=15)


def test_many_requests_in_flight_in_both_directions_at_once() -> None:
    count = 40

    async def scenario() -> None:
        async with connected() as e:
            a_calls = [
                asyncio.create_task(e.a.request(WORK, Work(value=v, block=True)))
                for v in range(count)
            ]
            b_calls = [
                asyncio.create_task(e.b.request(WORK, Work(value=1000 + v, block=True)))
                for v in range(count)
            ]
            for v in range(count):
                await e.wb.started[v].wait()
                await e.wa.started[1000 + v].wait()
            # Every call of both directions is being handled at the same time.
            assert e.wb.running == count and e.wa.running == count
            for v in reversed(range(count)):
                e.wb.release[v].set()
                e.wa.release[1000 + v].set()
            a_results = await asyncio.gather(*a_calls)
            b_results = await asyncio.gather(*b_calls)
            assert [(r.value, r.by) for r in a_results] == [(2 * v, "b") for v in range(count)]
            assert [(r.value, r.by) for r in b_results] == [
                (2 * (1000 + v), "a") for v in range(count)
            ]
            assert e.wa.most_running == e.wb.most_running == count
            a_ids = [m["id"] for m in requests_of(e.ta.sent_messages(), "test/work")]
            assert a_ids == list(range(1, count + 1))

    run(scenario(), timeout=15)


def test_string_ids_from_the_peer_are_echoed_and_a_duplicate_in_flight_id_is_refused() -> None:
    async def scenario() -> None:
        async with session_and_wire() as (_, worker, wire):
            wire.send(
                {
                    "jsonrpc": "2.0",
                    "id": "req-1",
                    "method": "test/work",
                    "params": {"value": 5, "block": True},
                }
            )
            await worker.started[5].wait()
            wire.send(
                {"jsonrpc": "2.0", "id": "req-1", "method": "test/work", "params": {"value": 6}}
            )
            duplicate = await wire.receive()
            assert duplicate is not None
            assert (
                duplicate["id"] == "req-1" and duplicate["error"]["code"] == jsonrpc.INVALID_REQUEST
            )
            worker.release[5].set()
            answer = await wire.receive()
            assert answer == {
                "jsonrpc": "2.0",
                "id": "req-1",
                "result": {"value": 10, "by": "session"},
            }

    run(scenario(), timeout=15)


def test_a_response_to_an_unknown_id_is_dropped() -> None:
    async def scenario() -> None:
        async with session_and_wire() as (session, _, wire):
            wire.send({"jsonrpc": "2.0", "id": 99, "result": {"value": 1, "by": "x"}})
            wire.send({"jsonrpc": "2.0", "id": "p", "method": "ping"})
            assert await wire.receive() == {"jsonrpc": "2.0", "id": "p", "result": {}}
            assert not session.is_closed

    run(scenario(), timeout=15)


# ------------------------------------------------------------------ notifications


def test_notifications_reach_their_handler_and_get_no_response() -> None:
    async def scenario() -> None:
        async with connected() as e:
            await e.a.notify(NOTE, Note(text="hello"))
            await e.a.notify(NOTE, Note(text="again"))
            assert await e.wb.notes.get() == ("hello", None)
            assert await e.wb.notes.get() == ("again", None)
            # An unknown notification, and a known one with bad params, are dropped quietly.
            await e.a.send_raw_notification("test/unknown", b"{}")
            await e.a.send_raw_notification("test/note", b'{"text": 5}')
            await e.a.request_raw("ping", None)  # everything before it has been read
            assert e.wb.notes.empty()
            assert all("error" not in m and "result" not in m for m in e.tb.sent_messages()[:-1])
            assert [m.get("method") for m in e.ta.sent_messages()] == [
                "test/note",
                "test/note",
                "test/unknown",
                "test/note",
                "ping",
            ]
            assert "id" not in e.ta.sent_messages()[0]

    run(scenario(), timeout=15)


# ------------------------------------------------------------------ errors


def test_errors_come_back_with_their_json_rpc_codes() -> None:
    async def scenario() -> None:
        async with connected() as e:
            with pytest.raises(McpError) as refused:
                await e.a.request(WORK, Work(value=3, error_code=-32042))
            assert (refused.value.code, refused.value.message, refused.value.data) == (
                -32042,
                "refused 3",
                {"value": 3},
            )

            with pytest.raises(McpError) as crashed:
                await e.a.request(WORK, Work(value=4, crash=True))
            assert crashed.value.code == jsonrpc.INTERNAL_ERROR
            assert crashed.value.message == "Internal error"

            with pytest.raises(McpError) as unknown:
                await e.a.request(UNROUTED, Work(value=1))
            assert unknown.value.code == jsonrpc.METHOD_NOT_FOUND
            assert "test/unrouted" in unknown.value.message

            with pytest.raises(McpError) as invalid:
                await e.a.request_raw("test/work", b'{"value": "five"}')
            assert invalid.value.code == jsonrpc.INVALID_PARAMS
            assert "$.value" in invalid.value.message

            with pytest.raises(McpError) as missing:
                await e.a.request_raw("test/work", None)
            assert missing.value.code == jsonrpc.INVALID_PARAMS

            # Nothing about the crash went on the wire but the generic error.
            wire = b"".join(e.tb.sent)
            assert b"secret" not in wire and b"Traceback" not in wire

            # The session carries on.
            assert (await e.a.request(WORK, Work(value=5))).value == 10

    run(scenario(), timeout=15)


def test_a_handler_that_is_not_implemented_answers_method_not_found() -> None:
    async def not_implemented(params: Work, ctx: SessionContext) -> Done:
        raise HandlerNotImplemented("test/unrouted")

    async def scenario() -> None:
        async with connected() as e:
            e.wb.router.add(UNROUTED, not_implemented)
            with pytest.raises(McpError) as error:
                await e.a.request(UNROUTED, Work(value=1))
            assert error.value.code == jsonrpc.METHOD_NOT_FOUND

    run(scenario(), timeout=15)


def test_a_result_that_fails_its_type_is_an_error_for_the_caller() -> None:
    async def scenario() -> None:
        async with session_and_wire() as (session, _, wire):
            call = asyncio.create_task(session.request(WORK, Work(value=1)))
            request = await wire.receive()
            assert request is not None
            wire.send(
                {"jsonrpc": "2.0", "id": request["id"], "result": {"value": "two", "by": "test"}}
            )
            with pytest.raises(McpError) as error:
                await call
            assert error.value.code == jsonrpc.INTERNAL_ERROR
            assert "$.value" in error.value.message

    run(scenario(), timeout=15)


# ------------------------------------------------------------------ timeouts and cancellation


def test_a_timed_out_request_fails_and_tells_the_peer_to_cancel() -> None:
    async def scenario() -> None:
        async with connected() as e:
            with pytest.raises(McpError) as error:
                await e.a.request(WORK, Work(value=1, block=True), timeout=0.2)
            assert error.value.code == jsonrpc.REQUEST_TIMEOUT
            assert "timed out" in error.value.message
            # The peer hears about it and stops the handler.
            await e.wb.cancelled[1].wait()
            notice = await e.ta.wait_sent(lambda m: m.get("method") == "notifications/cancelled")
            assert notice["params"]["requestId"] == 1
            assert "id" not in notice
            await e.a.request_raw("ping", None)
            assert responses_to(e.tb.sent_messages(), 1) == []
            # The session still works.
            assert (await e.a.request(WORK, Work(value=2))).value == 4

    run(scenario(), timeout=15)


def test_the_timeout_also_covers_a_request_stuck_behind_backpressure() -> None:
    async def scenario() -> None:
        async with connected() as e:
            e.ta.pause()  # the peer stops reading: drain() does not return
            with pytest.raises(McpError) as error:
                await e.a.request(WORK, Work(value=1), timeout=0.2)
            assert error.value.code == jsonrpc.REQUEST_TIMEOUT
            assert not e.a.is_closed
            e.ta.resume()
            notice = await e.ta.wait_sent(lambda m: m.get("method") == "notifications/cancelled")
            assert notice["params"]["requestId"] == 1
            assert (await e.a.request(WORK, Work(value=2))).value == 4

    run(scenario(), timeout=15)


def test_the_default_timeout_applies_when_a_call_gives_none() -> None:
    async def scenario() -> None:
        async with connected(default_timeout=0.2) as e:
            with pytest.raises(McpError) as error:
                await e.a.request(WORK, Work(value=1, block=True))
            assert error.value.code == jsonrpc.REQUEST_TIMEOUT
            await e.wb.cancelled[1].wait()
            # A call's own timeout overrides the default.
            call = asyncio.create_task(e.a.request(WORK, Work(value=2, block=True), timeout=30))
            await e.wb.started[2].wait()
            e.wb.release[2].set()
            assert (await call).value == 4

    run(scenario(), timeout=15)


def test_cancelling_the_awaiting_task_cancels_the_request_at_the_peer() -> None:
    async def scenario() -> None:
        async with connected() as e:
            call = asyncio.create_task(e.a.request(WORK, Work(value=1, block=True)))
            await e.wb.started[1].wait()
            call.cancel()
            with pytest.raises(asyncio.CancelledError):
                await call
            await e.wb.cancelled[1].wait()
            notice = await e.ta.wait_sent(lambda m: m.get("method") == "notifications/cancelled")
            assert notice["params"]["requestId"] == 1
            assert isinstance(notice["params"].get("reason"), str)
            # The cancelled handler sent no response; everything else still works.
            await e.a.request_raw("ping", None)
            assert responses_to(e.tb.sent_messages(), 1) == []
            assert (await e.a.request(WORK, Work(value=2))).value == 4
            assert e.wb.running == 0

    run(scenario(), timeout=15)


def test_a_received_cancellation_cancels_the_handler_and_no_response_is_sent() -> None:
    async def scenario() -> None:
        async with session_and_wire() as (_, worker, wire):
            wire.send(
                {
                    "jsonrpc": "2.0",
                    "id": 7,
                    "method": "test/work",
                    "params": {"value": 1, "block": True},
                }
            )
            wire.send(
                {
                    "jsonrpc": "2.0",
                    "id": 8,
                    "method": "test/work",
                    "params": {"value": 2, "block": True},
                }
            )
            await worker.started[1].wait()
            await worker.started[2].wait()
            wire.send(
                {
                    "jsonrpc": "2.0",
                    "method": "notifications/cancelled",
                    "params": {"requestId": 7, "reason": "no"},
                }
            )
            await worker.cancelled[1].wait()
            # Cancellations of unknown or finished requests, or without params, are ignored.
            wire.send(
                {
                    "jsonrpc": "2.0",
                    "method": "notifications/cancelled",
                    "params": {"requestId": 12345},
                }
            )
            wire.send({"jsonrpc": "2.0", "method": "notifications/cancelled"})
            wire.send({"jsonrpc": "2.0", "id": "p", "method": "ping"})
            assert await wire.receive() == {"jsonrpc": "2.0", "id": "p", "result": {}}
            worker.release[2].set()
            assert await wire.receive() == {
                "jsonrpc": "2.0",
                "id": 8,
                "result": {"value": 4, "by": "session"},
            }
            assert not worker.cancelled[2].is_set()
            # The id of the cancelled request never got an answer.
            wire.send({"jsonrpc": "2.0", "id": "q", "method": "ping"})
            assert await wire.receive() == {"jsonrpc": "2.0", "id": "q", "result": {}}

    run(scenario(), timeout=15)


def test_a_request_cancelled_before_its_handler_ran_is_dropped_cleanly() -> None:
    async def scenario() -> None:
        async with session_and_wire() as (_, worker, wire):
            # Both arrive before the session's loop yields: the handler never starts.
            wire.send({"jsonrpc": "2.0", "id": 1, "method": "test/work", "params": {"value": 1}})
            wire.send(
                {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}}
            )
            wire.send({"jsonrpc": "2.0", "id": "p", "method": "ping"})
            assert await wire.receive() == {"jsonrpc": "2.0", "id": "p", "result": {}}
            assert not worker.started[1].is_set()
            wire.send({"jsonrpc": "2.0", "id": "q", "method": "ping"})
            assert await wire.receive() == {"jsonrpc": "2.0", "id": "q", "result": {}}

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run(scenario(), timeout=15)
        gc.collect()
    assert not [w for w in caught if "never awaited" in str(w.message)], [
        str(w.message) for w in caught
    ]


# ------------------------------------------------------------------ progress


def test_progress_goes_only_to_the_call_that_asked_for_it() -> None:
    async def scenario() -> None:
        async with connected() as e:
            seen: dict[int, list[tuple[float, float | None, str | None]]] = {1: [], 2: []}
            async_seen: list[str | None] = []

            def on_progress_1(progress: float, total: float | None, message: str | None) -> None:
                seen[1].append((progress, total, message))

            def on_progress_2(progress: float, total: float | None, message: str | None) -> None:
                seen[2].append((progress, total, message))

            async def on_progress_async(
                progress: float, total: float | None, message: str | None
            ) -> None:
                async_seen.append(message)

            results = await asyncio.gather(
                e.a.request(WORK, Work(value=1, steps=3), on_progress=on_progress_1),
                e.a.request(WORK, Work(value=2, steps=3), on_progress=on_progress_2),
                e.a.request(WORK, Work(value=3, steps=2), on_progress=on_progress_async),
                e.a.request(WORK, Work(value=4, steps=2)),  # asked for no progress
            )
            assert [r.value for r in results] == [2, 4, 6, 8]
            assert seen[1] == [(1, 3, "1:1"), (2, 3, "1:2"), (3, 3, "1:3")]
            assert seen[2] == [(1, 3, "2:1"), (2, 3, "2:2"), (3, 3, "2:3")]
            await e.a.request_raw("ping", None)
            assert async_seen == ["3:1", "3:2"]

            sent = requests_of(e.ta.sent_messages(), "test/work")
            tokens = [m["params"].get("_meta", {}).get("progressToken") for m in sent]
            assert tokens == [1, 2, 3, None]
            progress = [
                m for m in e.tb.sent_messages() if m.get("method") == "notifications/progress"
            ]
            assert len(progress) == 8  # the call without a token got none
            # The notifications really were interleaved on the wire.
            order = [m["params"]["progressToken"] for m in progress]
            assert order != sorted(order)

    run(scenario(), timeout=15)


def test_a_progress_token_is_merged_into_existing_meta_and_strays_are_ignored() -> None:
    async def scenario() -> None:
        async with session_and_wire() as (session, _, wire):
            seen: list[float] = []
            call = asyncio.create_task(
                session.request(
                    WORK,
                    Work(value=1, meta={"trace": "abc"}),
                    on_progress=lambda p, t, m: seen.append(p),
                )
            )
            request = await wire.receive()
            assert request is not None
            assert request["params"]["_meta"] == {"trace": "abc", "progressToken": request["id"]}
            token = request["id"]
            for message in (
                {"progressToken": "someone-else", "progress": 99},
                {"progressToken": token, "progress": "not a number"},
                {"progressToken": token, "progress": 0.5, "total": None, "message": None},
            ):
                wire.send({"jsonrpc": "2.0", "method": "notifications/progress", "params": message})
            wire.send({"jsonrpc": "2.0", "id": token, "result": {"value": 2, "by": "test"}})
            assert (await call).value == 2
            assert seen == [0.5]
            # After the response, the token is forgotten.
            wire.send(
                {
                    "jsonrpc": "2.0",
                    "method": "notifications/progress",
                    "params": {"progressToken": token, "progress": 1},
                }
            )
            wire.send({"jsonrpc": "2.0", "id": "p", "method": "ping"})
            assert await wire.receive() == {"jsonrpc": "2.0", "id": "p", "result": {}}
            assert seen == [0.5]

    run(scenario(), timeout=15)


# ------------------------------------------------------------------ ping


def test_ping_is_answered_by_the_session_itself_in_both_directions() -> None:
    async def scenario() -> None:
        async with connected() as e:
            assert "ping" not in e.wa.router.requests and "ping" not in e.wb.router.requests
            assert bytes(await e.a.request_raw("ping", None)) == b"{}"
            assert bytes(await e.b.request_raw("ping", None)) == b"{}"
            result = await e.a.request(v2025.PING, None)
            assert isinstance(result, EmptyResult)
            pings = requests_of(e.ta.sent_messages(), "ping")
            assert [m["id"] for m in pings] == [1, 2]
            assert responses_to(e.tb.sent_messages(), 1) == [
                {"jsonrpc": "2.0", "id": 1, "result": {}}
            ]

    run(scenario(), timeout=15)


# ------------------------------------------------------------------ shutdown


def test_closing_fails_every_pending_call_with_connection_closed() -> None:
    async def scenario() -> None:
        async with connected() as e:
            calls = [
                asyncio.create_task(e.a.request(WORK, Work(value=v, block=True))) for v in (1, 2, 3)
            ]
            reverse = asyncio.create_task(e.b.request(WORK, Work(value=9, block=True)))
            for v in (1, 2, 3):
                await e.wb.started[v].wait()
            await e.wa.started[9].wait()
            await e.a.close()
            outcomes = await asyncio.gather(*calls, return_exceptions=True)
            assert all(isinstance(o, ConnectionClosed) for o in outcomes), outcomes
            assert all(
                o.code == jsonrpc.CONNECTION_CLOSED for o in outcomes if isinstance(o, McpError)
            )
            assert e.a.is_closed and e.a.closed.is_set()
            # a's own handler was stopped; the peer saw the stream end and failed its call too.
            await e.wa.cancelled[9].wait()
            with pytest.raises(ConnectionClosed):
                await reverse
            await e.b.closed.wait()
            for v in (1, 2, 3):
                await e.wb.cancelled[v].wait()
            # Nothing more can be sent, and nothing is written trying.
            written = len(e.ta.sent)
            with pytest.raises(ConnectionClosed):
                await e.a.request(WORK, Work(value=4))
            with pytest.raises(ConnectionClosed):
                await e.a.notify(NOTE, Note(text="late"))
            assert len(e.ta.sent) == written
            # Closing twice is harmless.
            await e.a.close()

    run(scenario(), timeout=15)


def test_the_peer_going_away_fails_pending_calls() -> None:
    async def scenario() -> None:
        async with session_and_wire() as (session, _, wire):
            calls = [asyncio.create_task(session.request(WORK, Work(value=v))) for v in (1, 2)]
            assert (await wire.receive()) is not None
            assert (await wire.receive()) is not None
            await wire.close()
            outcomes = await asyncio.gather(*calls, return_exceptions=True)
            assert all(isinstance(o, ConnectionClosed) for o in outcomes), outcomes
            assert "closed" in str(outcomes[0])
            await session.closed.wait()

    run(scenario(), timeout=15)


def test_sessions_decode_params_with_the_spec_type() -> None:
    """Handlers get the generated type, not a dict."""

    async def scenario() -> None:
        got: list[Any] = []

        async def handler(params: Work, ctx: SessionContext) -> Done:
            got.append(params)
            return Done(value=params.value, by="x")

        async with connected() as e:
            e.wb.router.add(WORK, handler)
            await e.a.request(WORK, Work(value=3, steps=0))
            assert got == [Work(value=3)]
            assert msgspec.json.encode(got[0]) == b'{"value":3}'

    run(scenario(), timeout=15)
