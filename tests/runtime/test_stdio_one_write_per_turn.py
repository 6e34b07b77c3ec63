"""Messages written in one turn of the event loop reach the pipe in one write
system call, on both sides of a stdio connection: the write per message was the
largest CPU cost of a request over stdio (counted here with the kernel's own
count of write calls, /proc/<pid>/io ``syscw``)."""

from __future__ import annotations

import asyncio
import json
import sys

import pytest
from support.peers import LOWLEVEL_SERVER, lowlevel_server, run
from support.rawstdio import RawServer

from mcp_runtime.client import Client, connect_stdio

CALLS = 16

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="reads /proc/<pid>/io")


def write_calls(pid: int | str = "self") -> int:
    with open(f"/proc/{pid}/io") as io:
        for line in io:
            if line.startswith("syscw:"):
                return int(line.split()[1])
    raise AssertionError("no syscw in /proc/<pid>/io")


def test_calls_made_together_leave_the_client_in_one_write() -> None:
    run(calls_made_together())


async def calls_made_together() -> None:
    async with connect_stdio(Client(name="t", version="0"), lowlevel_server()) as session:
        await session.request_raw("ping", None)  # warmed up
        before = write_calls()
        results = await asyncio.gather(*(session.request_raw("ping", None) for _ in range(CALLS)))
        written = write_calls() - before
    assert [bytes(result) for result in results] == [b"{}"] * CALLS
    # All sixteen are written in the turn the gathered calls start in: one
    # write (a little slack for anything else the process writes meanwhile).
    assert written <= 3, f"{written} write calls for {CALLS} requests"


def test_answers_of_one_turn_leave_the_server_in_one_write() -> None:
    run(answers_of_one_turn())


async def answers_of_one_turn() -> None:
    server = await RawServer.start([sys.executable, str(LOWLEVEL_SERVER)])
    try:
        await server.initialize()
        await server.request("warm", "ping")
        before = write_calls(server.process.pid)
        lines = b"".join(
            json.dumps({"jsonrpc": "2.0", "id": i, "method": "ping"}).encode() + b"\n"
            for i in range(CALLS)
        )
        await server.send(lines[:-1])  # one write: the server reads them in one turn
        answered = {(await server.response(i))["id"] for i in range(CALLS)}
        written = write_calls(server.process.pid) - before
    finally:
        await server.close()
    assert answered == set(range(CALLS))
    assert written <= 3, f"{written} write calls for {CALLS} answers"
