"""What every token-getting provider shares: an ``httpx2.Auth`` that puts
``Authorization: Bearer`` on each request to the MCP server and, when the
server answers 401 or 403 ``insufficient_scope``, gets a token that fits
(refresh, or a new grant) and sends the request again.

* Before a request: a token within ``refresh_margin`` seconds of expiry is
  refreshed when there is a refresh token.
* 401: discovery runs again (the resource may have moved to another
  authorization server; tokens and client credentials of the old one are then
  not used), a refresh token of the same server is tried, else a new grant;
  the request is sent once more.
* 403 ``insufficient_scope``: a new grant for the scopes asked for so far and
  those the challenge names, at most ``max_step_ups`` times in a row without a
  request succeeding in between.

One authorization runs at a time; requests that fail meanwhile use its result.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncGenerator, AsyncIterator, Generator

import httpx2

from ._discovery import BearerChallenge, Discovery, bearer_challenge, discover
from ._dpop import NONCE_ERROR, DPoPKey
from ._errors import AuthorizationError
from ._metadata import Tokens
from ._storage import InMemoryTokenStorage, TokenStorage
from ._tokens import ClientAuthentication, token_request, tokens_from

logger = logging.getLogger(__name__)


class TokenProvider(httpx2.Auth):
    """Base of :class:`~.oauth.OAuthClientProvider` and
    :class:`~.client_credentials.ClientCredentialsProvider`: subclasses say
    how a new token is obtained (:meth:`obtain`) and how the client
    authenticates at the token endpoint (:meth:`client_authentication`)."""

    def __init__(
        self,
        server_url: str,
        *,
        storage: TokenStorage | None = None,
        http_client: httpx2.AsyncClient | None = None,
        timeout: float = 30.0,
        max_step_ups: int = 2,
        refresh_margin: float = 60.0,
        dpop: bool = False,
    ) -> None:
        self.server_url = server_url
        self.dpop = DPoPKey() if dpop else None
        self.storage: TokenStorage = storage if storage is not None else InMemoryTokenStorage()
        self.max_step_ups = max_step_ups
        self.refresh_margin = refresh_margin
        self._http_client = http_client
        self._timeout = timeout
        self._lock = asyncio.Lock()
        self._authorizations = 0  # authorizations after a 401 ended, whatever their outcome
        self._failure: AuthorizationError | None = None  # why the last one failed, if it did
        self._discovery: Discovery | None = None
        self._requested: tuple[str, ...] = ()
        self._step_ups = 0

    # ------------------------------------------------------------ for subclasses

    async def obtain(
        self, http: httpx2.AsyncClient, discovery: Discovery, scopes: tuple[str, ...]
    ) -> Tokens:
        """New tokens for ``scopes`` at the authorization server ``discovery`` found."""
        raise NotImplementedError

    async def client_authentication(
        self, http: httpx2.AsyncClient, discovery: Discovery
    ) -> ClientAuthentication:
        """How this client authenticates at that server's token endpoint."""
        raise NotImplementedError

    def initial_scopes(
        self, challenge: BearerChallenge | None, discovery: Discovery
    ) -> tuple[str, ...]:
        """The scopes of a first grant (after a 401)."""
        raise NotImplementedError

    def step_up_scopes(
        self, challenge: BearerChallenge, discovery: Discovery, earlier: tuple[str, ...]
    ) -> tuple[str, ...]:
        """The scopes of a step-up grant (after a 403 insufficient_scope)."""
        raise NotImplementedError

    def dpop_for(self, discovery: Discovery) -> DPoPKey | None:
        """The DPoP key to bind tokens of that server to, if both sides do DPoP."""
        return (
            self.dpop if self.dpop is not None and DPoPKey.supported_by(discovery.server) else None
        )

    # ------------------------------------------------------------ httpx2.Auth

    def sync_auth_flow(
        self, request: httpx2.Request
    ) -> Generator[httpx2.Request, httpx2.Response, None]:
        raise RuntimeError(f"{type(self).__name__} works with httpx2.AsyncClient only")

    async def async_auth_flow(
        self, request: httpx2.Request
    ) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        tokens = await self._fresh_tokens()
        self._present(request, tokens)
        response = yield request
        if response.status_code == 401 and self._new_nonce(request, response):
            self._present(request, tokens)  # the same token, a proof with the server's nonce
            response = yield request
        if (
            response.status_code == 401 and request.method != "DELETE"
        ):  # ending a session is not worth an authorization
            tokens = await self._reauthorize(tokens, bearer_challenge(response.headers))
            self._present(request, tokens)
            response = yield request
            if response.status_code == 401 and self._new_nonce(request, response):
                self._present(request, tokens)
                response = yield request
        while response.status_code == 403:
            challenge = bearer_challenge(response.headers)
            if not challenge.insufficient_scope:
                break
            stepped = await self._step_up(tokens, challenge)
            if stepped is None:
                break
            tokens = stepped
            self._present(request, tokens)
            response = yield request
        if response.status_code < 400:
            self._step_ups = 0

    def _present(self, request: httpx2.Request, tokens: Tokens | None) -> None:
        request.headers.pop("dpop", None)
        if tokens is None:
            request.headers.pop("authorization", None)
        elif tokens.token_type == "DPoP" and self.dpop is not None:
            request.headers["authorization"] = f"DPoP {tokens.access_token}"
            request.headers["dpop"] = self.dpop.proof(
                request.method, str(request.url), tokens.access_token
            )
        else:
            request.headers["authorization"] = f"Bearer {tokens.access_token}"

    def _new_nonce(self, request: httpx2.Request, response: httpx2.Response) -> bool:
        """Whether the server asked for a DPoP nonce the request did not carry."""
        if self.dpop is None or "dpop" not in request.headers:
            return False
        if bearer_challenge(response.headers).error != NONCE_ERROR:
            return False
        return self.dpop.remember_nonce(str(request.url), response.headers.get("dpop-nonce"))

    # ------------------------------------------------------------ the steps

    @contextlib.asynccontextmanager
    async def _http(self) -> AsyncIterator[httpx2.AsyncClient]:
        if self._http_client is not None:
            yield self._http_client
            return
        async with httpx2.AsyncClient(timeout=self._timeout) as http:
            yield http

    async def _changed(self, used: Tokens | None) -> Tokens | None:
        """The current tokens if another request replaced ``used`` meanwhile."""
        current = await self.storage.get_tokens()
        if current is not None and (used is None or current.access_token != used.access_token):
            return current
        return None

    async def _discover(
        self, http: httpx2.AsyncClient, challenge: BearerChallenge | None
    ) -> Discovery:
        discovery = await discover(http, self.server_url, challenge)
        previous = self._discovery
        if previous is not None and previous.issuer != discovery.issuer:
            logger.info(
                "%s now uses the authorization server %s instead of %s; authorizing there anew",
                self.server_url,
                discovery.issuer,
                previous.issuer,
            )
        tokens = await self.storage.get_tokens()
        if tokens is not None and (
            tokens.issuer != discovery.issuer or tokens.resource != discovery.resource
        ):
            await self.storage.set_tokens(
                None
            )  # another server's tokens are never presented or refreshed
        self._discovery = discovery
        return discovery

    async def _grant(
        self, http: httpx2.AsyncClient, discovery: Discovery, scopes: tuple[str, ...]
    ) -> Tokens:
        tokens = await self.obtain(http, discovery, scopes)
        self._requested = scopes
        await self.storage.set_tokens(tokens)
        return tokens

    async def _refresh(
        self, http: httpx2.AsyncClient, discovery: Discovery, tokens: Tokens
    ) -> Tokens | None:
        """Tokens from ``tokens.refresh_token``, or None if the server refuses it."""
        assert tokens.refresh_token is not None
        form = {
            "grant_type": "refresh_token",
            "refresh_token": tokens.refresh_token,
            "resource": discovery.resource,
        }
        try:
            auth = await self.client_authentication(http, discovery)
            dpop = self.dpop_for(discovery)
            response = await token_request(http, discovery.server, form, auth, dpop)
            fresh = tokens_from(
                response,
                issuer=discovery.issuer,
                resource=discovery.resource,
                requested=tuple(tokens.scopes),
                refresh_token=tokens.refresh_token,
                dpop=dpop is not None,
            )
        except AuthorizationError as error:
            logger.info("refreshing the access token failed: %s", error.message)
            await self.storage.set_tokens(None)
            return None
        await self.storage.set_tokens(fresh)
        return fresh

    async def _fresh_tokens(self) -> Tokens | None:
        tokens = await self.storage.get_tokens()
        if (
            tokens is None
            or tokens.refresh_token is None
            or not tokens.expires_within(self.refresh_margin)
        ):
            return tokens
        async with self._lock:
            if (changed := await self._changed(tokens)) is not None:
                return changed
            async with self._http() as http:
                try:
                    discovery = self._discovery or await self._discover(http, None)
                except AuthorizationError as error:
                    logger.info("cannot refresh the access token: %s", error.message)
                    return tokens  # the server's 401, if it comes, starts over
                return (
                    await self._refresh(http, discovery, tokens)
                    if discovery.issuer == tokens.issuer
                    else None
                )

    async def _reauthorize(self, used: Tokens | None, challenge: BearerChallenge) -> Tokens:
        authorizations = self._authorizations
        async with self._lock:
            if (changed := await self._changed(used)) is not None:
                return changed
            if self._authorizations != authorizations and self._failure is not None:
                # The authorization this call waited for failed (the user
                # declined, the server is unreachable): so does the call.
                # Trying again in turn, each waiting call would ask the user anew.
                raise self._failure
            self._failure = (
                None  # and so it stays if this attempt is cancelled: a waiting call then tries
            )
            try:
                async with self._http() as http:
                    discovery = await self._discover(http, challenge)
                    current = await self.storage.get_tokens()
                    if (
                        used is not None
                        and current is not None
                        and current.refresh_token is not None
                    ):
                        refreshed = await self._refresh(http, discovery, current)
                        if refreshed is not None:
                            return refreshed
                    return await self._grant(
                        http, discovery, self.initial_scopes(challenge, discovery)
                    )
            except AuthorizationError as error:
                self._failure = error
                raise
            finally:
                self._authorizations += 1

    async def _step_up(self, used: Tokens | None, challenge: BearerChallenge) -> Tokens | None:
        async with self._lock:
            if (changed := await self._changed(used)) is not None:
                return changed
            if self._step_ups >= self.max_step_ups:
                logger.warning(
                    "%s still answers insufficient_scope after %d step-ups; giving up",
                    self.server_url,
                    self._step_ups,
                )
                return None
            self._step_ups += 1
            async with self._http() as http:
                discovery = await self._discover(http, challenge)
                earlier = (*self._requested, *(used.scopes if used is not None else ()))
                return await self._grant(
                    http, discovery, self.step_up_scopes(challenge, discovery, earlier)
                )
