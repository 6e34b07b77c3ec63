"""Every limit and timeout of the HTTP apps, in one documented, frozen object.

``http_app(server, options=HttpOptions(max_body_size=1 << 20, session_timeout=600))``:
:class:`HttpOptions` is taken by :func:`~mcpbind.http.http_app`,
:class:`~mcpbind.http.StreamableHTTPApp` and :class:`~mcpbind.http.LegacySSEApp`
alike, so a deployment states its limits once. The defaults bound what one client can hold
(memory, connections, places) on a server of a few GiB; see
docs/guides/deployment-hardening.md.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

MIB = 1024 * 1024
DEFAULT_MAX_BODY = 4 * MIB
DEFAULT_MAX_BODIES_BUFFERED = 64 * MIB
DEFAULT_BODY_TIMEOUT = 30.0
DEFAULT_EVENT_RETENTION = 60.0
DEFAULT_MAX_REPLAY = 256 * MIB
DEFAULT_MAX_STREAM_BUFFER = 16 * MIB
# Per client (the principal, else the peer's address): on by default so that one
# client cannot take every place of a server, and far above what a real client
# holds (a handful of sessions and streams), so that many users behind one
# address are not refused. None turns a quota off.
DEFAULT_MAX_SESSIONS_PER_CLIENT = 512
DEFAULT_MAX_STREAMS_PER_CLIENT = 128
DEFAULT_MAX_REQUESTS_PER_CLIENT = 256


@dataclass(frozen=True, slots=True, kw_only=True)
class HttpOptions:
    """The limits and timeouts of an HTTP app (sizes in bytes, times in seconds).

    Requests and bodies:

    * ``max_body_size``: larger POST bodies get 413.
    * ``max_bodies_buffered``: bytes of request bodies being read at once, app-wide (503 for
      the body that would pass it).
    * ``body_timeout``: seconds a POST body has to arrive in full (408 after; None: no limit).
    * ``max_concurrent_requests``: requests in flight per handshake session, and the
      2026-07-28 requests of the whole app (and the requests of the stateless mode); more
      get 429. It counts handlers still running, whether or not their POST is still open.
    * ``max_requests_per_client``: 2026-07-28 requests of one client in flight at once (429
      past it). A client is the authenticated principal, else
      the peer's address (behind a proxy, the forwarded address the server trusts: see
      ``trusted_proxies``). Every per-client quota is on by default
      (512 sessions, 128 streams, 256 requests); None turns one off. With a shared store
      each worker counts a client's 2026-07-28 requests and ``subscriptions/listen``
      streams on its own (so that they need nothing from the store), unless
      ``app_wide_request_counts``.
    * ``app_wide_request_counts``: with a shared store, count ``max_requests_per_client``
      (and a listen stream's place in ``max_streams_per_client``) across every worker: a
      lease in the store per request or listen stream (a script to take it, a ``ZREM`` to
      free it: 2 round trips each). Each of these store calls is bounded by
      ``app_wide_count_timeout`` seconds; past it, or with the store unavailable, the
      request or stream is counted by this worker alone (fail open, to the per-worker count
      of the default: the same limit, per worker), the worker logs it once, and asks the
      store again 5 s later (one request at a time until it answers).
    * ``trusted_proxies``: addresses and networks (``"10.0.0.0/8"``) of the reverse
      proxies in front of the app. A request from one of them is keyed by the address it
      forwarded (``X-Forwarded-For``, else ``Forwarded``: the right-most hop that is not a
      trusted proxy); from any other peer, by the peer's address, whatever it sends.
      Empty (the default): forwarded headers are ignored.

    Handshake sessions (the revisions before 2026-07-28):

    * ``max_sessions``: sessions kept at once. When it is reached, a new session first takes
      the place of an idle one (never used after initialize first, else the least recently
      seen); 503 only when every session is busy. ``max_sessions_per_client``: the same,
      per client. With a shared store the cap is app-wide, and the sessions of the
      2024-11-05 HTTP+SSE transport are capped by it too (counted apart).
    * ``session_timeout``: idle seconds after which a session is dropped (None: never).

    Long-lived streams (GET streams, 2026-07-28 ``subscriptions/listen``, and the sessions
    of the 2024-11-05 HTTP+SSE transport, each one stream):

    * ``max_streams``: open at once, counted apart from requests so that they cannot starve
      them; ``max_streams_per_client`` per client; more get 429 (503 for HTTP+SSE past
      ``max_streams``). With a shared store a session's streams (GET, HTTP+SSE) take their
      client's place in it, app-wide (503 when it is unavailable); a listen stream's is
      counted like a 2026-07-28 request's (see ``app_wide_request_counts``).
    * ``keepalive``: quiet seconds after which a 2026-07-28 SSE stream gets a comment line,
      so that proxies and idle timeouts leave long ones open.

    SSE streams and their resumption:

    * ``retry_ms``: the ``retry`` a client waits before resuming a dropped stream.
    * ``event_history``: events each stream keeps for resumption, at most.
    * ``max_stream_buffer``: bytes each stream keeps for replay and lets wait for a client
      that does not read; past it that connection is dropped (the client may resume).
    * ``event_retention``: seconds an event is kept for resumption, purged in the
      background; ``max_session_replay`` and ``max_replay``: bytes kept per session and
      app-wide (past them the oldest go, finished streams' first).
    * ``finished_stream_retention``: seconds a stream whose requests are all answered stays
      resumable, and ``finished_streams_kept`` how many such streams a session keeps (the
      newest).

    The app itself:

    * ``shutdown_grace``: seconds ``close()`` lets 2026-07-28 requests in flight finish
      before it ends them.
    * ``tool_schemas_ttl``: seconds the ``x-mcp-header`` annotations of the server's tools
      are trusted before they are listed again (to check ``Mcp-Param-*`` headers), and
      ``tool_schemas_retry`` the least seconds between two listings.
    """

    max_body_size: int = DEFAULT_MAX_BODY
    max_bodies_buffered: int = DEFAULT_MAX_BODIES_BUFFERED
    body_timeout: float | None = DEFAULT_BODY_TIMEOUT
    max_concurrent_requests: int = 1024
    max_requests_per_client: int | None = DEFAULT_MAX_REQUESTS_PER_CLIENT
    app_wide_request_counts: bool = False
    app_wide_count_timeout: float = 1.0
    trusted_proxies: tuple[str, ...] = ()
    max_sessions: int = 10_000
    max_sessions_per_client: int | None = DEFAULT_MAX_SESSIONS_PER_CLIENT
    session_timeout: float | None = 30 * 60
    max_streams: int = 1024
    max_streams_per_client: int | None = DEFAULT_MAX_STREAMS_PER_CLIENT
    keepalive: float = 15.0
    retry_ms: int = 1000
    event_history: int = 1024
    max_stream_buffer: int = DEFAULT_MAX_STREAM_BUFFER
    event_retention: float = DEFAULT_EVENT_RETENTION
    max_session_replay: int = DEFAULT_MAX_STREAM_BUFFER
    max_replay: int = DEFAULT_MAX_REPLAY
    finished_stream_retention: float = 60.0
    finished_streams_kept: int = 1024
    shutdown_grace: float = 1.0
    tool_schemas_ttl: float = 30.0
    tool_schemas_retry: float = 1.0


DEFAULT_OPTIONS: Final = HttpOptions()
