"""An authorization server that answers with too much, for testing what reads its answers.

A plain asyncio HTTP/1.1 server on 127.0.0.1 (no framework in between, so
it writes exactly what it is told and counts it). Every path answers with
one of these forms of a huge body, by the first segment of the path (after
an optional ``/.well-known/...`` prefix, which names the document asked for):

* ``declared``: ``Content-Length`` of ``huge`` bytes, then the bytes;
* ``chunked``: chunked encoding of ``huge`` bytes, no length given;
* ``gzip``: gzip that decompresses to ``huge`` bytes (about a thousandth of that);
* ``trickle``: chunked, one byte every 50 ms, without end.

Except the documents that send a client on to the hostile endpoints: the
protected resource metadata of ``/good/mcp``
(``/.well-known/oauth-protected-resource/good/mcp``) names the authorization
server ``/good``, whose metadata (``/.well-known/oauth-authorization-server/good``)
gives ``/<form>/...`` endpoints for the form the test sets in ``endpoint_form``.

``sent`` counts the body bytes each answer got out before the client hung up.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import zlib
from typing import Any

FORMS = ("declared", "chunked", "gzip")
TRICKLE_PAUSE = 0.05
CHUNK = 64 * 1024


class HostileAuthorizationServer:
    def __init__(self, huge: int = 64 * 1024 * 1024) -> None:
        self.huge = huge
        self.endpoint_form = "chunked"
        self.sent: list[int] = []
        self.open = 0  # connections being answered
        self._server: asyncio.Server | None = None
        self.port = 0
        self._bomb = _gzip_of_zeros(huge)

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def __aenter__(self) -> HostileAuthorizationServer:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *_: Any) -> None:
        assert self._server is not None
        self._server.close()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self._server.wait_closed(), 5)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        sent = [0]  # body bytes written, counted as they go out
        self.open += 1
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            request_line, *lines = head.decode("latin-1").split("\r\n")
            path = request_line.split(" ")[1].split("?")[0]
            length = next(
                (int(x.split(":", 1)[1]) for x in lines if x.lower().startswith("content-length:")),
                0,
            )
            await reader.readexactly(length)
            document = self._document(path)
            if document is not None:
                body = json.dumps(document).encode()
                writer.write(
                    b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
                    b"content-length: %d\r\nconnection: close\r\n\r\n%s" % (len(body), body)
                )
                await writer.drain()
                return
            form = path.removeprefix("/.well-known/oauth-authorization-server").removeprefix(
                "/.well-known/oauth-protected-resource"
            )
            form = form.strip("/").split("/")[0]
            if form == "trickle":
                await self._trickle(writer, sent)
            else:
                await self._huge(writer, form if form in FORMS else "chunked", sent)
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()
            self.sent.append(sent[0])
            self.open -= 1

    def _document(self, path: str) -> dict[str, Any] | None:
        form = self.endpoint_form
        if path == "/.well-known/oauth-protected-resource/good/mcp":
            return {
                "resource": f"{self.base}/good/mcp",
                "authorization_servers": [f"{self.base}/good"],
            }
        if path == "/.well-known/oauth-authorization-server/good":
            issuer = f"{self.base}/good"
            return {
                "issuer": issuer,
                "authorization_endpoint": f"{self.base}/{form}/authorize",
                "token_endpoint": f"{self.base}/{form}/token",
                "registration_endpoint": f"{self.base}/{form}/register",
                "jwks_uri": f"{self.base}/{form}/jwks",
                "introspection_endpoint": f"{self.base}/{form}/introspect",
            }
        return None

    async def _trickle(self, writer: asyncio.StreamWriter, sent: list[int]) -> None:
        writer.write(
            b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n"
        )
        while True:
            writer.write(b"1\r\n0\r\n")
            sent[0] += 1
            await writer.drain()
            await asyncio.sleep(TRICKLE_PAUSE)

    async def _huge(self, writer: asyncio.StreamWriter, form: str, sent: list[int]) -> None:
        """Send the huge answer in ``form``, counting its body bytes in ``sent[0]``
        (until the client hangs up: writing then raises ConnectionError)."""
        if form == "gzip":
            writer.write(
                b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-encoding: gzip\r\n"
                b"content-length: %d\r\n\r\n" % len(self._bomb)
            )
            for start in range(0, len(self._bomb), CHUNK):
                piece = self._bomb[start : start + CHUNK]
                writer.write(piece)
                sent[0] += len(piece)
                await writer.drain()
            return
        chunked = form == "chunked"
        framing = b"transfer-encoding: chunked" if chunked else b"content-length: %d" % self.huge
        writer.write(
            b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n" + framing + b"\r\n\r\n"
        )
        piece = b"0" * CHUNK
        while sent[0] < self.huge:
            writer.write(b"%x\r\n%s\r\n" % (CHUNK, piece) if chunked else piece)
            sent[0] += CHUNK
            await writer.drain()
        if chunked:
            writer.write(b"0\r\n\r\n")
            await writer.drain()


@functools.lru_cache(maxsize=1)  # made once for all the tests of a process
def _gzip_of_zeros(size: int) -> bytes:
    """``size`` zeros as gzip (about a thousandth of their size), made a MiB at a time."""
    compressor = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    mib = b"0" * (1024 * 1024)
    parts = [compressor.compress(mib) for _ in range(size // len(mib))]
    return b"".join([*parts, compressor.flush()])
