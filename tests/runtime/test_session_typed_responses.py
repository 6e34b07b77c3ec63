"""Responses to typed calls decoded in one pass give exactly what the general path gives.

A session decodes a response laid out as ``{"jsonrpc":"2.0","id":N,"result":...}``
straight into the result type its call expects, without first decoding the
envelope. For every response below, well-formed or not, the call must end the
same way (same result, or same error code and message) and the session must
send the peer the same messages, with the shortcut and without it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest
from support.router import WORK, TableRouter, Work
from support.transports import memory_pair

from mcpbind._core.jsonrpc import McpError
from mcpbind._core.outgoing import Outgoing
from mcpbind._core.session import Session

Respond = Callable[[int], bytes]

RESPONSES: dict[str, Respond] = {
    "well-formed": lambda n: b'{"jsonrpc":"2.0","id":%d,"result":{"value":2,"by":"x"}}' % n,
    "well-formed, newline": lambda n: b'{"jsonrpc":"2.0","id":%d,"result":{"value":2,"by":"x"}}\n'
    % n,
    "spaced": lambda n: b' { "jsonrpc" : "2.0" ,\t"id" : %d ,\r\n "result" : { "value" : 2, "by" : "x" } }  \n'
    % n,
    "extra result members": lambda n: b'{"jsonrpc":"2.0","id":%d,"result":{"value":2,"by":"x","more":[1,{}]}}'
    % n,
    "wrong result shape": lambda n: b'{"jsonrpc":"2.0","id":%d,"result":{"value":"two","by":"x"}}'
    % n,
    "null result": lambda n: b'{"jsonrpc":"2.0","id":%d,"result":null}' % n,
    "wrong shape, then bad JSON": lambda n: b'{"jsonrpc":"2.0","id":%d,"result":{"value":"two", ### }}'
    % n,
    "bad JSON in the result": lambda n: b'{"jsonrpc":"2.0","id":%d,"result":{"value":2,"by":x}}'
    % n,
    "invalid UTF-8 in the result": lambda n: b'{"jsonrpc":"2.0","id":%d,"result":{"value":2,"by":"\xff"}}'
    % n,
    "nested too deeply": lambda n: b'{"jsonrpc":"2.0","id":%d,"result":{"value":2,"by":"x","deep":%s%s}}'
    % (n, b"[" * 100_000, b"]" * 100_000),
    "error member after the result": lambda n: (
        b'{"jsonrpc":"2.0","id":%d,"result":{"value":2,"by":"x"},"error":{"code":-5,"message":"no"}}'
        % n
    ),
    "method member after the result": lambda n: b'{"jsonrpc":"2.0","id":%d,"result":{},"method":"test/work"}'
    % n,
    "result twice": lambda n: (
        b'{"jsonrpc":"2.0","id":%d,"result":{"value":1,"by":"x"},"result":{"value":2,"by":"y"}}' % n
    ),
    "trailing garbage": lambda n: b'{"jsonrpc":"2.0","id":%d,"result":{"value":2,"by":"x"}}x' % n,
    "extra closing brace": lambda n: b'{"jsonrpc":"2.0","id":%d,"result":{"value":2,"by":"x"}}}'
    % n,
    "trailing comma": lambda n: b'{"jsonrpc":"2.0","id":%d,"result":{"value":2,"by":"x"},}' % n,
    "no closing brace": lambda n: b'{"jsonrpc":"2.0","id":%d,"result":{"value":2,"by":"x"}' % n,
    "empty result": lambda n: b'{"jsonrpc":"2.0","id":%d,"result":}' % n,
    "result first": lambda n: b'{"result":{"value":2,"by":"x"},"jsonrpc":"2.0","id":%d}' % n,
    "id as a string": lambda n: b'{"jsonrpc":"2.0","id":"%d","result":{"value":2,"by":"x"}}' % n,
    "id with a leading zero": lambda n: b'{"jsonrpc":"2.0","id":0%d,"result":{"value":2,"by":"x"}}'
    % n,
    "id as a float": lambda n: b'{"jsonrpc":"2.0","id":%d.0,"result":{"value":2,"by":"x"}}' % n,
    "unknown id": lambda n: b'{"jsonrpc":"2.0","id":%d,"result":{"value":2,"by":"x"}}' % (n + 1000),
    "jsonrpc 1.0": lambda n: b'{"jsonrpc":"1.0","id":%d,"result":{"value":2,"by":"x"}}' % n,
    "vertical tab is not JSON space": lambda n: b'{"jsonrpc":"2.0",\x0b"id":%d,"result":{"value":2,"by":"x"}}'
    % n,
}


# Small responses always take the general path: pad each result past that size.
PAD = b'{"pad":"' + b"p" * 5000 + b'",'


def _padded(respond: Respond) -> Respond:
    return lambda n: respond(n).replace(b'"result":{', b'"result":' + PAD, 1)


async def _outcome(
    respond: Respond, shortcut: bool, monkeypatch: pytest.MonkeyPatch
) -> tuple[Any, list[bytes]]:
    """How the call ends (or that it is still waiting), and what the session sent back."""
    if not shortcut:
        monkeypatch.setattr(Outgoing, "deliver_typed", lambda self, data: False)
    ta, tb = memory_pair("a", "b")
    session = Session(ta, TableRouter(), protocol_version="2025-11-25")
    session.start()
    try:
        call = asyncio.ensure_future(session.request(WORK, Work(value=1)))
        request = await tb.receive()
        assert request is not None
        tb.send(respond(request["id"]))
        done, _ = await asyncio.wait({call}, timeout=0.5)
        if not done:
            call.cancel()
            outcome: Any = "still waiting"
        elif call.exception() is not None:
            error = call.exception()
            outcome = (type(error).__name__, getattr(error, "code", None), str(error))
        else:
            result = call.result()
            outcome = ("result", type(result).__name__, result.value, result.by)
        await asyncio.sleep(0.05)
        sent = [m for m in ta.sent[1:] if b"notifications/cancelled" not in m]
        return outcome, sent
    finally:
        await session.close()
        monkeypatch.undo()


@pytest.mark.parametrize("padded", [False, True], ids=["small", "large"])
@pytest.mark.parametrize("name", list(RESPONSES))
def test_the_shortcut_changes_nothing(
    name: str, padded: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    respond = _padded(RESPONSES[name]) if padded else RESPONSES[name]
    with_shortcut = asyncio.run(_outcome(respond, True, monkeypatch))
    without = asyncio.run(_outcome(respond, False, monkeypatch))
    assert with_shortcut == without


def test_the_shortcut_is_taken_for_well_formed_responses(monkeypatch: pytest.MonkeyPatch) -> None:
    taken: list[bool] = []
    original = Outgoing.deliver_typed

    def spy(self: Outgoing, data: bytes) -> bool:
        taken.append(original(self, data))
        return taken[-1]

    monkeypatch.setattr(Outgoing, "deliver_typed", spy)
    outcome, _ = asyncio.run(
        _outcome(_padded(RESPONSES["well-formed, newline"]), True, pytest.MonkeyPatch())
    )
    assert outcome == ("result", "Done", 2, "x")
    assert taken == [True]


def test_errors_of_typed_calls_are_unchanged(monkeypatch: pytest.MonkeyPatch) -> None:
    outcome, _ = asyncio.run(_outcome(RESPONSES["wrong result shape"], True, monkeypatch))
    assert (
        outcome[0] == McpError.__name__
        and outcome[1] == -32603
        and "invalid result for test/work" in outcome[2]
    )
