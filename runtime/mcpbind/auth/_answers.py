"""An authorization server's answers, read within a size limit.

What an authorization server answers (metadata, a JWKS, tokens, a client
registration, an introspection) is a small JSON document. Both the client
and the resource server read it here, as a stream that is given up past
:data:`MAX_ANSWER` bytes: a server that answers with more, by mistake or to
exhaust memory, costs at most that much. It must also arrive whole within
the HTTP client's read timeout (30 s when the client has none): a server
that trickles it, a byte just before each read would time out, holds the
reader no longer than that.

The answer is asked for uncompressed, and one compressed all the same is
refused: a few KiB of gzip can stand for gigabytes, and a decoder given
them all at once would make them before the length could be checked.
"""

from __future__ import annotations

import asyncio
from typing import Any, NamedTuple

import httpx2

MAX_ANSWER = 1024 * 1024
"""Largest answer read from an authorization server, in bytes."""

DEFAULT_DEADLINE = 30.0
"""Seconds for a whole answer when the HTTP client sets no read timeout."""


class UnreadableAnswer(Exception):
    """An answer not read: longer than the limit (nothing past it was read),
    compressed, or not whole by the deadline."""

    def __init__(self, url: str, problem: str) -> None:
        super().__init__(f"the answer of {url} {problem}")
        self.url = url
        self.problem = problem


class Answer(NamedTuple):
    """An answer read whole: what the callers look at of an httpx2.Response."""

    status_code: int
    reason_phrase: str
    headers: httpx2.Headers
    content: bytes


async def read_answer(
    http: httpx2.AsyncClient,
    method: str,
    url: str,
    *,
    limit: int = MAX_ANSWER,
    deadline: float | None = None,
    **options: Any,
) -> Answer:
    """``method url`` sent with ``http`` (``options`` as ``http.request``
    takes them), and its whole answer. Raises httpx2.HTTPError when there is
    no complete answer, UnreadableAnswer past ``limit`` bytes, when
    compressed, or when not whole within ``deadline`` seconds (by default
    the client's read timeout), whatever the status."""
    if deadline is None:
        deadline = http.timeout.read if http.timeout.read is not None else DEFAULT_DEADLINE
    try:
        async with asyncio.timeout(deadline):
            return await _read(http, method, url, limit, **options)
    except TimeoutError:
        raise UnreadableAnswer(url, f"did not arrive whole within {deadline:g} s") from None


async def _read(
    http: httpx2.AsyncClient, method: str, url: str, limit: int, **options: Any
) -> Answer:
    headers = httpx2.Headers(options.pop("headers", None))
    headers["accept-encoding"] = "identity"
    async with http.stream(method, url, headers=headers, **options) as response:
        encoding = response.headers.get("content-encoding", "identity").strip().lower()
        if encoding not in ("identity", ""):
            raise UnreadableAnswer(
                url, f"is compressed ({encoding}) although it was asked for uncompressed"
            )
        declared = response.headers.get("content-length", "")
        if declared.isascii() and declared.isdigit() and int(declared) > limit:
            raise UnreadableAnswer(url, f"is larger than {limit} bytes")
        chunks: list[bytes] = []
        size = 0
        async for chunk in response.aiter_raw():
            size += len(chunk)
            if size > limit:
                raise UnreadableAnswer(url, f"is larger than {limit} bytes")
            chunks.append(chunk)
        return Answer(
            response.status_code, response.reason_phrase, response.headers, b"".join(chunks)
        )
