"""Behind a trusted reverse proxy the per-client quotas count the client the
proxy forwarded (``HttpOptions(trusted_proxies=...)``), not the proxy; from
any other peer the forwarded headers are ignored, so a client cannot pick its
own key. Served by uvicorn (one worker), the headers sent as a proxy in front
of it would send them."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from support.scaleout import MODERN, SseReader, Workers, modern_meta
from support.scaleout_app import Tools

from mcpbind._core.limits import TrustedProxies
from mcpbind._extensions.tasks.serving import Tasks
from mcpbind._server.server import Server
from mcpbind._transports.http.server.streamable import StreamableHTTPApp
from mcpbind.http import HttpOptions

STREAMS_PER_CLIENT = 1


def serve(trusted_proxies: str) -> Iterator[Workers]:
    workers = Workers(
        None,
        workers=1,
        store="memory",
        quotas=f"512,{STREAMS_PER_CLIENT},256,30",
        trusted_proxies=trusted_proxies,
    )
    try:
        workers.start()
        yield workers
    finally:
        workers.stop()


@pytest.fixture(scope="module")
def trusting() -> Iterator[Workers]:
    """Trusts the loopback network the test's requests come from."""
    yield from serve("127.0.0.0/8,::1")


@pytest.fixture(scope="module")
def distrusting() -> Iterator[Workers]:
    """Trusts only a proxy network the requests do not come from."""
    yield from serve("10.0.0.0/8")


class Streams:
    """Listen streams held open for a test, closed at its end."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.open: list[SseReader] = []

    def listen(self, **forwarded: str) -> int:
        """Open a 2026-07-28 ``subscriptions/listen`` stream with the given
        headers (``x_forwarded_for=...``, ``forwarded=...``); its HTTP status."""
        headers = {"content-type": "application/json",
                   "accept": "application/json, text/event-stream",
                   "mcp-protocol-version": MODERN, "mcp-method": "subscriptions/listen",
                   **{name.replace("_", "-"): value for name, value in forwarded.items()}}  # fmt: skip
        body = {
            "jsonrpc": "2.0",
            "id": len(self.open) + 1,
            "method": "subscriptions/listen",
            "params": {"notifications": {"toolsListChanged": True}, "_meta": modern_meta()},
        }
        reader = SseReader("POST", self.url, headers, body)
        self.open.append(reader)
        if reader.response.status_code == 200:
            assert reader.next()[1]["method"] == "notifications/subscriptions/acknowledged"
        return reader.response.status_code

    def legacy(self, **forwarded: str) -> int:
        """Open a 2024-11-05 HTTP+SSE stream (``GET /sse``) with the given headers; its status."""
        headers = {name.replace("_", "-"): value for name, value in forwarded.items()}
        reader = SseReader("GET", self.url.removesuffix("/mcp") + "/sse", headers)
        self.open.append(reader)
        return reader.response.status_code

    def close(self) -> None:
        for reader in self.open:
            reader.close()


@pytest.fixture
def streams_of(request: pytest.FixtureRequest) -> Iterator[type[Streams]]:
    made: list[Streams] = []

    class Tracked(Streams):
        def __init__(self, url: str) -> None:
            super().__init__(url)
            made.append(self)

    yield Tracked
    for streams in made:
        streams.close()


def test_a_trusted_proxy_s_clients_are_counted_apart_by_forwarded_address(
    trusting: Workers, streams_of: type[Streams]
) -> None:
    streams = streams_of(trusting.url)
    assert streams.listen(x_forwarded_for="203.0.113.1") == 200
    assert streams.listen(x_forwarded_for="203.0.113.2") == 200  # another client behind it
    assert streams.listen(x_forwarded_for="203.0.113.1") == 429  # the first one's quota is full
    assert streams.listen(forwarded='for="203.0.113.3:4711";proto=https') == 200
    assert streams.listen(forwarded="for=203.0.113.3") == 429


def test_legacy_sse_streams_count_against_the_forwarded_client_s_stream_quota(
    trusting: Workers, streams_of: type[Streams]
) -> None:
    """One client cannot take every legacy SSE place of a server: its streams
    count with its other long-lived streams, keyed as Streamable HTTP keys it."""
    streams = streams_of(trusting.url)
    assert streams.legacy(x_forwarded_for="203.0.113.21") == 200
    assert streams.legacy(x_forwarded_for="203.0.113.21") == 429
    assert streams.listen(x_forwarded_for="203.0.113.21") == 429  # one quota for both kinds
    assert streams.legacy(x_forwarded_for="203.0.113.22") == 200  # another client is served
    streams.open[0].close()  # the first client's stream ends: its place is free again
    for _ in range(200):  # once the server has seen the connection close
        if streams.legacy(x_forwarded_for="203.0.113.21") == 200:
            break
        time.sleep(0.05)
    else:
        raise AssertionError("the place of a closed legacy stream was not given back")


def test_hops_a_client_wrote_itself_are_not_believed(
    trusting: Workers, streams_of: type[Streams]
) -> None:
    streams = streams_of(trusting.url)
    assert streams.listen(x_forwarded_for="198.51.100.1") == 200
    # The client claims to be someone else; the proxy appended the address it saw.
    assert streams.listen(x_forwarded_for="192.0.2.77, 198.51.100.1") == 429
    # Through two trusted proxies: the right-most hop that is not a proxy is the client.
    assert streams.listen(x_forwarded_for="198.51.100.2, 127.0.0.5") == 200
    assert streams.listen(x_forwarded_for="198.51.100.2") == 429


def test_forwarded_headers_from_an_untrusted_peer_are_ignored(
    distrusting: Workers, streams_of: type[Streams]
) -> None:
    streams = streams_of(distrusting.url)
    assert streams.listen(x_forwarded_for="203.0.113.1") == 200
    # Keyed by the peer (127.0.0.1): a new forwarded address does not buy a new quota.
    assert streams.listen(x_forwarded_for="203.0.113.2") == 429
    assert streams.listen(forwarded="for=203.0.113.3") == 429


def test_forwarded_ipv6_nodes_are_read_without_brackets_or_ports() -> None:
    proxies = TrustedProxies(["::1"])
    scope = {
        "type": "http",
        "client": ("::1", 50000),
        "headers": [(b"forwarded", b'for="[2001:db8::7]:4711", for=unknown;by=x')],
    }
    # "unknown" (an obfuscated node) is not a proxy we trust: it is the client.
    assert proxies.client_address(scope) == "unknown"
    scope["headers"] = [(b"forwarded", b'For="[2001:db8::7]:4711";proto=https')]
    assert proxies.key(scope) == "peer:2001:db8::7"


def test_a_trusted_proxy_that_is_no_address_is_refused_saying_so() -> None:
    with pytest.raises(ValueError, match="trusted_proxies: 'proxy.internal' is neither"):
        StreamableHTTPApp(
            Server(Tools(Tasks()), name="t", version="1"),
            options=HttpOptions(trusted_proxies=("10.0.0.0/8", "proxy.internal")),
        )
