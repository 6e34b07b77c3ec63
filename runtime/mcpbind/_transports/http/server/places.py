"""Fairness: the places that long-lived streams and 2026-07-28 requests hold.

A long-lived stream (a GET stream, ``subscriptions/listen``) or a 2026-07-28 request in
flight holds a place: against this process's cap (``max_streams``,
``max_concurrent_requests``), and against its client's quota. With a shared store a
session's stream's quota is app-wide (a lease in the store); a 2026-07-28 request's and a
listen stream's is this process's own unless ``app_wide_request_counts`` (a stateless
request then needs nothing from the store), and an app-wide count the store cannot give
in time falls back to this process's (see :meth:`Places.hold_request`). Streams are
counted apart from requests so that they cannot starve them. A refusal is an HTTP status
and why.
"""

from __future__ import annotations

import logging
import time

from ...._core.limits import ClientKey, Quota
from ....stores import Store, StoreUnavailable
from ....stores._quotas import SharedQuota
from ..asgi import Scope
from .options import HttpOptions

# Refused by a per-client quota (2026-07-28 requests; streams), in this process or app-wide.
CLIENT_REQUESTS_FULL = "Too many requests in flight for this client"
CLIENT_STREAMS_FULL = "Too many streams open for this client"

STORE_RETRY = 5.0
"""Seconds a worker counts requests and listen streams on its own after the store failed
to count one app-wide, before it asks the store again (one at a time until it answers)."""

logger = logging.getLogger(__name__)

Refusal = tuple[int, str]
"""An HTTP status and why."""

TOO_MANY_REQUESTS: Refusal = (429, "Too many requests in flight")


class Places:
    """The places of one app. ``shared``: the store other workers share, if any (the
    per-client quotas are then leases in it; the caps stay this process's own)."""

    def __init__(
        self,
        options: HttpOptions,
        client_key: ClientKey,
        shared: Store | None,
        sessions: bool = True,
    ) -> None:
        """``sessions``: whether the app serves GET streams (not in stateless mode)."""
        self.options = options
        self.client_key = client_key
        self.stream_quota = Quota(options.max_streams_per_client)
        self.request_quota = Quota(options.max_requests_per_client)  # 2026-07-28 requests
        self.streams = 0  # long-lived streams open (GET streams, subscriptions/listen)
        self.requests = 0  # other 2026-07-28 requests in flight (places held)
        self.stream_leases = None
        if shared is not None and options.max_streams_per_client is not None and sessions:
            self.stream_leases = SharedQuota(shared, "streams", options.max_streams_per_client)
        # The stateless ones (2026-07-28 requests, listen streams): app-wide only on
        # demand, each store call bounded. A listen stream's lease is in the same set as
        # the GET streams' (one quota of streams per client, app-wide).
        self.request_leases = self.listen_leases = None
        if shared is not None and options.app_wide_request_counts:
            timeout = options.app_wide_count_timeout
            if options.max_requests_per_client is not None:
                limit = options.max_requests_per_client
                self.request_leases = SharedQuota(shared, "requests", limit, timeout=timeout)
            if options.max_streams_per_client is not None:
                limit = options.max_streams_per_client
                self.listen_leases = SharedQuota(shared, "streams", limit, timeout=timeout)
        # While the store cannot count stateless places app-wide: when to ask it again,
        # and whether a request is asking it now.
        self._store_down = False
        self._store_retry_at = 0.0
        self._store_probing = False

    async def hold_stream(self, client: str) -> tuple[Refusal | None, str | None]:
        """A place for a session's stream (a GET stream): a lease of the shared store's
        when there is one (503 when it is unavailable), else this process's own."""
        if self.streams >= self.options.max_streams:
            return (429, "Too many streams open"), None
        refused, lease = await take_place(self.stream_quota, self.stream_leases, client)
        if refused is not None:
            return (refused[0], refused[1] or CLIENT_STREAMS_FULL), None
        self.streams += 1
        return None, lease

    async def hold_listen(self, client: str) -> tuple[Refusal | None, str | None]:
        """A place for a ``subscriptions/listen`` stream: this process's own (the
        default), or a lease of the shared store's with ``app_wide_request_counts``,
        by the rule of :meth:`hold_request` when the store does not count it in time."""
        if self.streams >= self.options.max_streams:
            return (429, "Too many streams open"), None
        asked, lease = await self._app_wide(self.listen_leases, client)
        full = lease is None if asked else not self.stream_quota.enter(client)
        if full:
            return (429, CLIENT_STREAMS_FULL), None
        self.streams += 1
        return None, lease

    def release_listen(self, client: str, lease: str | None) -> None:
        self.streams -= 1
        if lease is not None:
            give_place(self.stream_quota, self.listen_leases, client, lease)
        else:  # counted here (the default, or while the store could not count it)
            self.stream_quota.leave(client)

    def release_stream(self, client: str, lease: str | None) -> None:
        self.streams -= 1
        give_place(self.stream_quota, self.stream_leases, client, lease)

    def client_of(self, scope: Scope, listen: bool) -> str:
        """The client key a 2026-07-28 request's place counts against (a
        stream's for subscriptions/listen); "" when no per-client limit counts them."""
        if listen:
            counted = self.stream_quota.limit is not None
        else:
            counted = self.request_quota.limit is not None or self.request_leases is not None
        return self.client_key(scope) if counted else ""

    def hold_request_here(self, client: str) -> Refusal | None:
        """A place for a 2026-07-28 request in this process's own counts (no
        shared store: nothing to wait for, not even a coroutine to make)."""
        if self.requests >= self.options.max_concurrent_requests:
            return TOO_MANY_REQUESTS
        if not self.request_quota.enter(client):
            return 429, CLIENT_REQUESTS_FULL
        self.requests += 1
        return None

    async def hold_request(self, client: str) -> tuple[Refusal | None, str | None]:
        """A place for a 2026-07-28 request: a lease of the shared store's (app-wide
        counts); None for the lease when the place is this process's own.

        The rule when the store does not count it within ``app_wide_count_timeout``
        (stalled, down, or every connection busy): the request is counted here, against
        the same limit (fail open, to the default per-worker count), rather than wait or
        be refused. The worker says so once, counts here for STORE_RETRY seconds, then
        lets one request at a time ask the store until it answers."""
        refused = self.too_many_requests()
        if refused is not None:
            return refused, None
        asked, lease = await self._app_wide(self.request_leases, client)
        if not asked:
            return self.hold_request_here(client), None
        if lease is None:
            return (429, CLIENT_REQUESTS_FULL), None
        self.requests += 1
        return None, lease

    async def _app_wide(self, leases: SharedQuota | None, client: str) -> tuple[bool, str | None]:
        """A stateless place of ``client`` counted app-wide: (True, its lease, or None
        when the client holds its limit already), or (False, None) for a place to count
        here: no app-wide counts, or the store did not count it in time (or is given
        time after failing to; requests and listen streams share this state, since
        they share the store)."""
        if leases is None:
            return False, None
        if self._store_down and (self._store_probing or time.monotonic() < self._store_retry_at):
            return False, None
        probing = self._store_down
        if probing:
            self._store_probing = True
        try:
            lease = await leases.take(client)
        except StoreUnavailable as error:
            if not self._store_down:
                logger.warning(
                    "2026-07-28 requests and listen streams are counted per client by this"
                    " worker alone for now (max_requests_per_client, max_streams_per_client),"
                    " not app-wide: %s",
                    error,
                )
            self._store_down = True
            self._store_retry_at = time.monotonic() + STORE_RETRY
            return False, None
        finally:
            if probing:
                self._store_probing = False
        if self._store_down:
            logger.warning(
                "2026-07-28 requests and listen streams are counted per client app-wide again"
            )
        self._store_down = False
        return True, lease

    def too_many_requests(self) -> Refusal | None:
        if self.requests >= self.options.max_concurrent_requests:
            return TOO_MANY_REQUESTS
        return None

    def release_request(self, client: str, lease: str | None) -> None:
        self.requests -= 1
        if lease is not None:
            give_place(self.request_quota, self.request_leases, client, lease)
        else:  # counted here (the default, or while the store could not count it)
            self.request_quota.leave(client)

    async def close(self) -> None:
        for leases in (self.stream_leases, self.request_leases, self.listen_leases):
            if leases is not None:
                await leases.close()


async def take_place(
    quota: Quota, leases: SharedQuota | None, client: str
) -> tuple[Refusal | None, str | None]:
    """A place of ``client``: in this process's ``quota``, or a lease of the
    shared ``leases`` when there are; the refusal (429 when full, with the
    reason left to the caller; 503 with the store's) or the lease."""
    if leases is None:
        return (None, None) if quota.enter(client) else ((429, ""), None)
    try:
        lease = await leases.take(client)
    except StoreUnavailable as error:
        return (503, f"Service Unavailable: {error}"), None
    return ((429, ""), None) if lease is None else (None, lease)


def give_place(quota: Quota, leases: SharedQuota | None, client: str, lease: str | None) -> None:
    if leases is None:
        quota.leave(client)
    elif lease is not None:
        leases.give(client, lease)
