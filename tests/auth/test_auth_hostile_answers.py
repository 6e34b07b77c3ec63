"""What reads an authorization server's answers, against one that answers
with 64 MiB (tests/support/hostile_authorization_server.py): declared in
Content-Length, chunked without a length, or as 64 KiB of gzip. The
client's discovery, registration, token requests and redirect follower, and
the resource server's metadata, JWKS and introspection reads each fail with a
clear error, having read at most MAX_ANSWER bytes of it; the server could
get out no more than what the sockets buffer. An answer trickled a byte at a
time, each well within the read timeout, ends at that timeout all the same."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any

import httpx2
import pytest
from joserfc import jws
from joserfc.jwk import ECKey
from support.hostile_authorization_server import FORMS, HostileAuthorizationServer
from support.http_servers import eventually, run

from mcpbind.auth._answers import MAX_ANSWER, UnreadableAnswer, read_answer
from mcpbind.auth.client import ClientMetadata, HTTPRedirectFollower
from mcpbind.auth.client._discovery import (
    fetch_authorization_server_metadata,
    fetch_protected_resource_metadata,
)
from mcpbind.auth.client._errors import AuthorizationError, MetadataError
from mcpbind.auth.client._registration import register
from mcpbind.auth.client._tokens import SecretAuthentication, token_request
from mcpbind.auth.server import IntrospectionVerifier, JWTVerifier
from mcpbind.auth.server._verifier import VerifierUnavailable

MIB = 1024 * 1024
# What may have left the server when the client hangs up: the limit plus the
# loopback sockets' buffers (a few MiB), far below the 64 MiB it would send.
MOST_SENT = 16 * MIB
TOO_LARGE = f"is larger than {MAX_ANSWER} bytes"
COMPRESSED = r"is compressed \(gzip\) although it was asked for uncompressed"
REFUSAL = {"declared": TOO_LARGE, "chunked": TOO_LARGE, "gzip": COMPRESSED}


def against_hostile(
    check: Callable[[HostileAuthorizationServer, httpx2.AsyncClient], Awaitable[None]],
    form: str = "chunked",
) -> list[int]:
    """Run ``check`` against a fresh hostile server whose metadata gives ``form``
    endpoints; the body bytes each of its answers got out."""

    async def main() -> list[int]:
        async with HostileAuthorizationServer() as server, httpx2.AsyncClient(timeout=30) as http:
            server.endpoint_form = form
            await check(server, http)
            await eventually(
                lambda: server.open == 0, what="the hostile server's connections to end"
            )
            return server.sent

    sent = run(main())
    assert sent and max(sent) < MOST_SENT, sent
    return sent


@pytest.mark.parametrize("form", FORMS)
def test_each_form_of_a_huge_answer_is_given_up_at_the_limit(form: str) -> None:
    async def check(server: HostileAuthorizationServer, http: httpx2.AsyncClient) -> None:
        with pytest.raises(UnreadableAnswer, match=REFUSAL[form]):
            await read_answer(http, "GET", f"{server.base}/{form}/document")

    against_hostile(check)


def test_an_answer_within_the_limit_is_read_whole_and_the_limit_is_exact() -> None:
    async def check(server: HostileAuthorizationServer, http: httpx2.AsyncClient) -> None:
        url = f"{server.base}/.well-known/oauth-authorization-server/good"
        answer = await read_answer(http, "GET", url)
        assert answer.status_code == 200 and answer.headers["content-type"] == "application/json"
        assert (
            await read_answer(http, "GET", url, limit=len(answer.content))
        ).content == answer.content
        with pytest.raises(
            UnreadableAnswer, match=f"is larger than {len(answer.content) - 1} bytes"
        ):
            await read_answer(http, "GET", url, limit=len(answer.content) - 1)

    against_hostile(check)


# ---------------------------------------------------------------- the client


@pytest.mark.parametrize("form", FORMS)
def test_client_discovery_refuses_huge_metadata(form: str) -> None:
    async def check(server: HostileAuthorizationServer, http: httpx2.AsyncClient) -> None:
        with pytest.raises(MetadataError, match=REFUSAL[form]):
            await fetch_protected_resource_metadata(http, f"{server.base}/{form}/mcp")
        with pytest.raises(MetadataError, match=REFUSAL[form]):
            await fetch_authorization_server_metadata(http, f"{server.base}/{form}")

    against_hostile(check)


@pytest.mark.parametrize("form", FORMS)
def test_client_registration_and_token_requests_refuse_huge_answers(form: str) -> None:
    async def check(server: HostileAuthorizationServer, http: httpx2.AsyncClient) -> None:
        prm = await fetch_protected_resource_metadata(http, f"{server.base}/good/mcp")
        metadata = await fetch_authorization_server_metadata(http, prm.authorization_servers[0])
        with pytest.raises(MetadataError, match=REFUSAL[form]):
            await register(
                http,
                metadata,
                ClientMetadata(redirect_uris=["http://127.0.0.1:1/callback"], client_name="victim"),
            )
        with pytest.raises(MetadataError, match=REFUSAL[form]):
            await token_request(
                http, metadata, {"grant_type": "client_credentials"}, SecretAuthentication("victim")
            )

    against_hostile(check, form)


def test_redirect_follower_reads_no_body() -> None:
    async def check(server: HostileAuthorizationServer, http: httpx2.AsyncClient) -> None:
        follower = HTTPRedirectFollower("http://127.0.0.1:1/callback", http_client=http)
        with pytest.raises(
            AuthorizationError, match="answered HTTP 200 instead of redirecting back"
        ):
            await follower.authorize(f"{server.base}/chunked/authorize?client_id=victim")

    against_hostile(check)


# ---------------------------------------------------------------- the resource server


def _signed_token() -> str:
    return jws.serialize_compact(
        {"alg": "ES256", "kid": "k"}, b"{}", ECKey.generate_key("P-256", private=True)
    )


@pytest.mark.parametrize("form", FORMS)
def test_resource_server_refuses_huge_metadata_jwks_and_introspection(form: str) -> None:
    async def check(server: HostileAuthorizationServer, http: httpx2.AsyncClient) -> None:
        resource = "http://127.0.0.1:1/mcp"
        attempts: list[tuple[Any, str]] = [
            (
                JWTVerifier(f"{server.base}/{form}", resource, http_client=http),
                "the authorization server metadata",
            ),
            (JWTVerifier(f"{server.base}/good", resource, http_client=http), "the JWKS"),
            (
                IntrospectionVerifier(
                    f"{server.base}/good",
                    resource,
                    client_id="rs",
                    client_secret="s",
                    http_client=http,
                ),
                "the introspection response",
            ),
        ]
        for verifier, what in attempts:
            with pytest.raises(VerifierUnavailable, match=f"{what} at http://\\S+ {REFUSAL[form]}"):
                await verifier.verify(_signed_token())

    against_hostile(check, form)


def test_a_refused_answer_leaves_the_client_usable() -> None:
    async def check(server: HostileAuthorizationServer, http: httpx2.AsyncClient) -> None:
        for _ in range(3):
            with pytest.raises(UnreadableAnswer):
                await read_answer(http, "GET", f"{server.base}/chunked/document")
            assert (
                await read_answer(
                    http, "GET", f"{server.base}/.well-known/oauth-authorization-server/good"
                )
            ).status_code == 200

    against_hostile(check)


# ---------------------------------------------------------------- a trickled answer


def test_a_trickled_answer_ends_at_the_read_timeout_for_the_whole_answer() -> None:
    async def check(server: HostileAuthorizationServer, http: httpx2.AsyncClient) -> None:
        url = f"{server.base}/trickle/document"
        async with httpx2.AsyncClient(timeout=0.5) as slow:
            started = time.monotonic()
            with pytest.raises(UnreadableAnswer, match=r"did not arrive whole within 0.5 s"):
                await read_answer(slow, "GET", url)
            assert time.monotonic() - started < 3
            with pytest.raises(MetadataError, match=r"did not arrive whole within 0.5 s"):
                await fetch_protected_resource_metadata(slow, f"{server.base}/trickle/mcp")
            verifier = JWTVerifier(
                f"{server.base}/good", "http://127.0.0.1:1/mcp", http_client=slow
            )
            server.endpoint_form = "trickle"
            with pytest.raises(
                VerifierUnavailable,
                match=r"the JWKS at http://\S+ did not arrive whole within 0.5 s",
            ):
                await verifier.verify(_signed_token())
        with pytest.raises(UnreadableAnswer, match=r"did not arrive whole within 0.3 s"):
            await read_answer(http, "GET", url, deadline=0.3)

    against_hostile(check)


def test_requests_waiting_for_a_failing_key_fetch_share_its_failure() -> None:
    """Eight requests arrive while the JWKS cannot be had (trickled past the
    0.5 s timeout): they wait for the one fetch under way and fail with it,
    rather than each fetching again in turn (8 x 0.5 s)."""

    async def check(server: HostileAuthorizationServer, http: httpx2.AsyncClient) -> None:
        server.endpoint_form = "trickle"
        async with httpx2.AsyncClient(timeout=0.5) as slow:
            verifier = JWTVerifier(
                f"{server.base}/good", "http://127.0.0.1:1/mcp", http_client=slow
            )

            async def attempt() -> str:
                try:
                    await verifier.verify(_signed_token())
                except VerifierUnavailable as error:
                    return str(error)
                return "verified"

            started = time.monotonic()
            outcomes = await asyncio.gather(*(attempt() for _ in range(8)))
            took = time.monotonic() - started
        assert all(
            "the JWKS at" in outcome and "did not arrive whole within 0.5 s" in outcome
            for outcome in outcomes
        )
        assert took < 2.0, took

    against_hostile(check)
