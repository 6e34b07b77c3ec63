"""A Redis with a password (``--requirepass``), and one reached over TLS
(``rediss://``, a certificate made by the test), a Redis Cluster over TLS
(``rediss+cluster://``) too: the password comes in the URL, the certificate
authority in ``from_url``'s keywords; a wrong password or an untrusted
certificate is refused with an error that says so."""

from __future__ import annotations

import asyncio
import datetime
import ipaddress
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from support.asgi import request
from support.everything_http import free_port
from support.peers import run
from support.redis_server import RedisClusterNodes, RedisServer
from support.scaleout import HANDSHAKE
from support.scaleout_app import Tools

from mcpbind._extensions.tasks.serving import Tasks
from mcpbind._server.server import Server
from mcpbind._transports.http.server.streamable import StreamableHTTPApp
from mcpbind.stores._base import StoreUnavailable
from mcpbind.stores._redis_store import RedisStore

pytestmark = pytest.mark.redis

PASSWORD = "pa ss/w@rd"


def certificate(directory: Path, name: str) -> tuple[Path, Path]:
    """A throwaway self-signed certificate for 127.0.0.1 and its key (PEM files)."""
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = directory / f"{name}.crt", directory / f"{name}.key"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_path, key_path


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[RedisServer, int, Path]]:
    """A redis-server with a password, on a plain port and a TLS port; the
    TLS port and the certificate that clients must trust."""
    directory = tmp_path_factory.mktemp("tls")
    cert, key = certificate(directory, "redis")
    tls_port = free_port()
    redis = RedisServer(
        ["--requirepass", PASSWORD, "--tls-port", str(tls_port), "--tls-cert-file", str(cert),
         "--tls-key-file", str(key), "--tls-ca-cert-file", str(cert), "--tls-auth-clients", "no"],
        password=PASSWORD,
    )  # fmt: skip
    try:
        redis.start()
        yield redis, tls_port, cert
    finally:
        redis.close()


async def exercise(store: RedisStore, name: str) -> None:
    """A session, an event log followed over pub/sub, the bus and a mailbox: what a
    worker does (``name``: the session's, new on the server)."""
    heard: list[bytes] = []
    posted: list[bytes] = []

    async def listen(message: bytes) -> None:
        heard.append(message)

    async def take(message: bytes) -> None:
        posted.append(message)

    store.subscribe(listen)
    await store.start()
    try:
        assert await store.create_session(name, b"record", 60, 10)
        assert await store.touch_session(name, 60) == b"record"
        reader = asyncio.ensure_future(store.read_after(f"{name}:g", 0, 30))
        while not store.bus.following:
            await asyncio.sleep(0.01)
        await store.append(f"{name}:g", b"event", 60, 10)
        assert await reader == ([(1, b"event")], False)
        await store.publish(b"hello")
        while not heard:
            await asyncio.sleep(0.01)
        assert heard == [b"hello"]
        async with store.hold_box(name, take):
            await store.post(name, b"for you")
            while not posted:
                await asyncio.sleep(0.01)
        assert posted == [b"for you"]
    finally:
        await store.close()


def test_a_password_in_the_url_opens_a_redis_that_requires_one(
    secured: tuple[RedisServer, int, Path],
) -> None:
    redis, _, _ = secured
    assert redis.url.startswith("redis://:pa%20ss%2Fw%40rd@")
    run(exercise(RedisStore.from_url(redis.url), "plain"), timeout=60)


def test_a_wrong_or_missing_password_is_refused_saying_so(
    secured: tuple[RedisServer, int, Path],
) -> None:
    redis, _, _ = secured

    async def scenario() -> None:
        for url in (
            f"redis://:wrong@127.0.0.1:{redis.port}/0",
            f"redis://127.0.0.1:{redis.port}/0",
        ):
            store = RedisStore.from_url(url)
            with pytest.raises(StoreUnavailable, match="refused this worker's credentials"):
                await store.create_session("s2", b"record", 60, 10)
            await store.close()
        # On the wire: the initialize gets 503 with the same words, and nothing else breaks.
        tools = Tools(Tasks())
        server = Server(tools, name="w", version="1")
        tools.server = server
        app = StreamableHTTPApp(
            server, store=RedisStore.from_url(f"redis://:wrong@127.0.0.1:{redis.port}/0")
        )
        params = {"protocolVersion": HANDSHAKE, "capabilities": {},
                  "clientInfo": {"name": "t", "version": "1"}}  # fmt: skip
        body = json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params})
        headers = {"content-type": "application/json",
                   "accept": "application/json, text/event-stream"}  # fmt: skip
        refused = await request(app, "POST", "/mcp", headers=headers, body=body.encode())
        assert refused.status == 503
        error = json.loads(refused.body)["error"]
        assert error["code"] == -32603 and "refused this worker's credentials" in error["message"]
        await app.close()

    run(scenario(), timeout=60)


def test_tls_with_a_trusted_certificate_and_a_password(
    secured: tuple[RedisServer, int, Path],
) -> None:
    redis, tls_port, cert = secured
    url = redis.url.replace("redis://", "rediss://").replace(f":{redis.port}/", f":{tls_port}/")
    run(exercise(RedisStore.from_url(url, ssl_ca_certs=str(cert)), "tls"), timeout=60)


def test_a_redis_cluster_over_tls(tmp_path: Path) -> None:
    """``rediss+cluster://``: the first node over TLS, and through it every other
    (the nodes announce their TLS ports), pub/sub included."""
    cert, key = certificate(tmp_path, "cluster")
    cluster = RedisClusterNodes(tls=(cert, key))
    try:
        cluster.start()
        assert cluster.url.startswith("rediss+cluster://")
        store = RedisStore.from_url(cluster.url, ssl_ca_certs=str(cert))
        run(exercise(store, "tls-cluster"), timeout=60)
        # What it wrote is in the cluster (read back here on each node's plain port).
        placed = [int(node.command("DBSIZE").split(b":")[1]) for node in cluster.nodes]
        assert sum(placed) > 0
    finally:
        cluster.close()


def test_tls_with_an_untrusted_certificate_is_refused_saying_so(
    secured: tuple[RedisServer, int, Path],
) -> None:
    redis, tls_port, _ = secured

    async def scenario() -> None:
        store = RedisStore.from_url(f"rediss://127.0.0.1:{tls_port}/0")
        with pytest.raises(StoreUnavailable, match="unreachable.*certificate verify failed"):
            await store.create_session("s3", b"record", 60, 10)
        await store.close()

    run(scenario(), timeout=60)
