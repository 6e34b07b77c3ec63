"""The client transports' network settings on aiohttp: proxies from the
environment or given, TLS with the system's authorities or a context of the
application's, redirects not followed."""

from __future__ import annotations

import datetime
import ipaddress
import ssl
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from support.http_servers import ThreadedServer, lowlevel_server, run, serving
from support.tcp_proxy import CuttableProxy

from mcpbind._client.client import Client
from mcpbind._core.jsonrpc import McpError
from mcpbind._transports.http.client.streamable import connect_http, connect_streamable_http
from mcpbind.http import http_app
from mcpbind_protocol import v2025_11_25 as mcp

PROXY_VARIABLES = (
    "http_proxy",
    "HTTP_PROXY",
    "https_proxy",
    "HTTPS_PROXY",
    "no_proxy",
    "NO_PROXY",
    "all_proxy",
    "ALL_PROXY",
)


def client() -> Client:
    return Client(name="network-test-client", version="0.1")


@pytest.fixture(scope="module")
def server() -> Iterator[ThreadedServer]:
    with serving(http_app(lowlevel_server())) as running:
        yield running


@pytest.fixture
def clean_proxy_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for name in PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


# ---------------------------------------------------------------- proxies


def test_the_environment_proxy_carries_every_request(
    server: ThreadedServer, clean_proxy_env: pytest.MonkeyPatch
) -> None:
    async def main() -> None:
        proxy = await CuttableProxy(server.port).start()
        try:
            clean_proxy_env.setenv("HTTP_PROXY", f"http://127.0.0.1:{proxy.port}")
            async with connect_http(client(), server.url()) as session:
                await mcp.ClientStub(session).ping()
                assert len((await mcp.ClientStub(session).list_tools()).tools) > 0
            assert proxy.connections >= 1
        finally:
            await proxy.close()

    run(main())


def test_no_proxy_bypasses_the_environment_proxy(
    server: ThreadedServer, clean_proxy_env: pytest.MonkeyPatch
) -> None:
    async def main() -> None:
        proxy = await CuttableProxy(server.port).start()
        try:
            clean_proxy_env.setenv("HTTP_PROXY", f"http://127.0.0.1:{proxy.port}")
            clean_proxy_env.setenv("NO_PROXY", "127.0.0.1")
            async with connect_streamable_http(client(), server.url()) as session:
                await mcp.ClientStub(session).ping()
            assert proxy.connections == 0
        finally:
            await proxy.close()

    run(main())


def test_a_given_session_with_its_own_proxy(
    server: ThreadedServer, clean_proxy_env: pytest.MonkeyPatch
) -> None:
    async def main() -> None:
        proxy = await CuttableProxy(server.port).start()
        try:
            async with aiohttp.ClientSession(proxy=f"http://127.0.0.1:{proxy.port}") as http:
                async with connect_streamable_http(
                    client(), server.url(), http_client=http
                ) as session:
                    await mcp.ClientStub(session).ping()
                assert not http.closed
            assert proxy.connections >= 1
        finally:
            await proxy.close()

    run(main())


def test_an_unreachable_proxy_is_a_clear_error(
    server: ThreadedServer, clean_proxy_env: pytest.MonkeyPatch
) -> None:
    clean_proxy_env.setenv("HTTP_PROXY", "http://127.0.0.1:9")

    async def main() -> None:
        with pytest.raises(McpError) as failed:
            async with connect_streamable_http(client(), server.url()):
                pass
        assert failed.value.message.startswith(
            f"POST {server.url()} failed: Cannot connect to host 127.0.0.1:9"
        )

    run(main())


# ---------------------------------------------------------------- TLS


@pytest.fixture(scope="module")
def certificate(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1 that no system trusts."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "mcp-codegen test")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    folder = tmp_path_factory.mktemp("tls")
    cert_file, key_file = folder / "cert.pem", folder / "key.pem"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_file, key_file


def test_tls_is_verified_against_the_system_authorities(
    certificate: tuple[Path, Path], clean_proxy_env: pytest.MonkeyPatch
) -> None:
    cert_file, key_file = certificate
    with serving(
        http_app(lowlevel_server()), ssl_certfile=str(cert_file), ssl_keyfile=str(key_file)
    ) as server:

        async def main() -> None:
            with pytest.raises(McpError) as failed:
                async with connect_streamable_http(client(), server.url()):
                    pass
            assert "certificate verify failed" in failed.value.message

        run(main())


def test_tls_with_the_application_context(
    certificate: tuple[Path, Path], clean_proxy_env: pytest.MonkeyPatch
) -> None:
    cert_file, key_file = certificate
    with serving(
        http_app(lowlevel_server()), ssl_certfile=str(cert_file), ssl_keyfile=str(key_file)
    ) as server:

        async def main() -> None:
            context = ssl.create_default_context(cafile=str(cert_file))
            async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=context)) as http:
                async with connect_streamable_http(
                    client(), server.url(), http_client=http
                ) as session:
                    assert server.url().startswith("https://")
                    await mcp.ClientStub(session).ping()

        run(main())


# ---------------------------------------------------------------- redirects


def test_a_redirect_is_not_followed(clean_proxy_env: pytest.MonkeyPatch) -> None:
    async def redirecting(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        await send(
            {
                "type": "http.response.start",
                "status": 307,
                "headers": [(b"location", b"http://127.0.0.1:9/mcp")],
            }
        )
        await send({"type": "http.response.body", "body": b""})

    with serving(redirecting) as server:

        async def main() -> None:
            with pytest.raises(McpError) as failed:
                async with connect_streamable_http(
                    client(), server.url(), headers={"Authorization": "Bearer secret"}
                ):
                    pass
            assert "HTTP 307" in failed.value.message
            assert (
                "Cannot connect" not in failed.value.message
            )  # port 9, where it points, was never tried

        run(main())
