"""The middleware users write first, shipped: timing, structured logging,
error mapping, rate limiting and caching (see :mod:`mcpbind.app._middleware`).

    app = App(
        "notes",
        middleware=[
            StructuredLogging(),
            ErrorMapping({LookupError: INVALID_PARAMS}),
            RateLimit(100, per=60.0),
            Cache(ttl=30.0),
        ],
    )
"""

from __future__ import annotations

import logging
import secrets
import time
import weakref
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .._core import lifecycle
from .._core.jsonrpc import INTERNAL_ERROR, McpError
from ..stores import Store
from ._middleware import Call, Next

# The JSON-RPC error of a call refused by RateLimit (implementation-defined server errors are -32000 to -32099).
RATE_LIMITED = -32029

# Clients counted in this process before those idle for a whole window are forgotten.
_SWEEP_AT = 4096


@dataclass
class MethodTimes:
    """What :class:`Timing` measured for one method."""

    count: int = 0
    errors: int = 0
    total_seconds: float = 0.0
    max_seconds: float = 0.0

    @property
    def mean_seconds(self) -> float:
        return self.total_seconds / self.count if self.count else 0.0


class Timing:
    """Counts and times every call by method (``timing.stats["tools/call"]``)."""

    def __init__(self) -> None:
        self.stats: dict[str, MethodTimes] = {}

    async def __call__(self, call: Call, call_next: Next) -> Any:
        started = time.perf_counter()
        failed = True
        try:
            result = await call_next(call)
            failed = False
            return result
        finally:
            elapsed = time.perf_counter() - started
            times = self.stats.get(call.method)
            if times is None:
                times = self.stats[call.method] = MethodTimes()
            times.count += 1
            times.errors += failed
            times.total_seconds += elapsed
            times.max_seconds = max(times.max_seconds, elapsed)


class StructuredLogging:
    """One log record per call, its fields in ``extra`` (for a JSON formatter):
    ``mcp_method``, ``mcp_name``, ``mcp_version``, ``mcp_client``,
    ``mcp_outcome`` ("ok" or the JSON-RPC error code) and ``mcp_ms``."""

    def __init__(
        self, logger: logging.Logger | str = "mcpbind.app.calls", level: int = logging.INFO
    ) -> None:
        self.logger = logging.getLogger(logger) if isinstance(logger, str) else logger
        self.level = level

    async def __call__(self, call: Call, call_next: Next) -> Any:
        if not self.logger.isEnabledFor(self.level):
            return await call_next(call)
        started = time.perf_counter()
        outcome: str | int = "ok"
        try:
            return await call_next(call)
        except McpError as error:
            outcome = error.code
            raise
        except Exception:
            outcome = INTERNAL_ERROR
            raise
        finally:
            elapsed_ms = round((time.perf_counter() - started) * 1000, 3)
            fields = {
                "mcp_method": call.method,
                "mcp_name": call.name,
                "mcp_version": call.protocol_version,
                "mcp_client": call.client,
                "mcp_outcome": outcome,
                "mcp_ms": elapsed_ms,
            }
            self.logger.log(
                self.level,
                "%s %s -> %s in %.3f ms",
                call.method,
                call.name or "",
                outcome,
                elapsed_ms,
                extra=fields,
            )


ErrorMapper = Callable[[Exception], McpError]


def _message(error: Exception) -> str:
    # str() of a KeyError is the repr of its key ("'x'"): its one argument is the message.
    if isinstance(error, KeyError) and len(error.args) == 1:
        return str(error.args[0]) or type(error).__name__
    return str(error) or type(error).__name__


class ErrorMapping:
    """Exceptions of the given types become JSON-RPC errors: a code (the
    message is the exception's; a ``KeyError``'s without the quotes of its
    repr) or a function building the McpError. The first matching type in
    the mapping's order wins; other exceptions pass (and end as -32603 with
    no details, as without this middleware)."""

    def __init__(self, mapping: Mapping[type[Exception], int | ErrorMapper]) -> None:
        self.mapping = tuple(mapping.items())

    async def __call__(self, call: Call, call_next: Next) -> Any:
        try:
            return await call_next(call)
        except McpError:
            raise
        except Exception as error:
            for kind, target in self.mapping:
                if isinstance(error, kind):
                    if isinstance(target, int):
                        raise McpError(target, _message(error)) from error
                    raise target(error) from error
            raise


class RateLimit:
    """At most ``limit`` requests per ``per`` seconds (a sliding window) for
    each client (:attr:`Call.client`: the principal, else the client's
    address, as the transport names clients for its own limits; ``key`` picks
    another). Past it the request is refused
    with :data:`RATE_LIMITED` and ``data.retryAfterSeconds``. Notifications
    pass. Counted in this process, or app-wide when the app has a shared
    store (``App(store=RedisStore.from_url(url))``)."""

    def __init__(
        self,
        limit: int,
        *,
        per: float = 60.0,
        key: Callable[[Call], str] | None = None,
        methods: Sequence[str] | None = None,
    ) -> None:
        if limit < 1 or per <= 0:
            raise ValueError("RateLimit needs limit >= 1 and per > 0")
        self.limit = limit
        self.per = per
        self.key = key
        self.methods = frozenset(methods) if methods is not None else None
        self.store: Store | None = None
        # In this process: the times of each client's requests in the window, oldest first.
        self._windows: dict[str, deque[float]] = {}

    def use_store(self, store: Store) -> None:
        """Count in ``store`` when it is shared (the app calls this with its store)."""
        self.store = store if store.shared else None

    async def __call__(self, call: Call, call_next: Next) -> Any:
        if call.notification or (self.methods is not None and call.method not in self.methods):
            return await call_next(call)
        who = self.key(call) if self.key is not None else call.client
        if self.store is not None:
            # App-wide: one lease per request, living as long as the window.
            taken = await self.store.take_lease(
                f"app-rate:{who}", secrets.token_hex(8), self.limit, self.per
            )
        else:
            taken = self._take_here(who)
        if not taken:
            raise McpError(
                RATE_LIMITED,
                f"Rate limit exceeded: at most {self.limit} requests per {self.per:g} s",
                {"retryAfterSeconds": self.per},
            )
        return await call_next(call)

    def _take_here(self, who: str) -> bool:
        now = time.monotonic()
        window = self._windows.get(who)
        if window is None:
            if len(self._windows) >= _SWEEP_AT:
                self._sweep(now)
            window = self._windows[who] = deque()
        start = now - self.per
        while window and window[0] <= start:
            window.popleft()
        if len(window) >= self.limit:
            return False
        window.append(now)
        return True

    def _sweep(self, now: float) -> None:
        """Forget the clients with no request in the window (they would pile up)."""
        start = now - self.per
        for who in [who for who, window in self._windows.items() if window[-1] <= start]:
            del self._windows[who]


class Cache:
    """Keeps list results (``tools/list`` ...) and ``resources/read`` results
    for ``ttl`` seconds. A result is kept per protocol revision and per
    session, or per client for a request without one (``shared=True``: one
    for every client, for data that is the same for all; never with
    per-session visibility or per-caller content). The app empties it when a list changes (an item added or removed, a
    visibility rule made), and drops a resource's entries when
    it calls ``notify_resource_updated``. Input-required results and errors
    are never kept."""

    def __init__(
        self, ttl: float = 30.0, *, shared: bool = False, methods: Sequence[str] | None = None
    ) -> None:
        self.ttl = ttl
        self.shared = shared
        # By default what list-changed and updated notifications make stale (generated protocol facts).
        self.methods = frozenset(methods if methods is not None else lifecycle.bindings().cacheable)
        # Shared entries, and those of requests without a session (keyed by client).
        self._kept: dict[tuple[str, ...], tuple[float, object]] = {}
        # A session's own entries live and die with it: visibility rules are
        # per session, and one address may hold several sessions.
        self._per_session: weakref.WeakKeyDictionary[
            object, dict[tuple[str, ...], tuple[float, object]]
        ] = weakref.WeakKeyDictionary()

    async def __call__(self, call: Call, call_next: Next) -> Any:
        if call.method not in self.methods:
            return await call_next(call)
        key = (
            call.method,
            call.protocol_version,
            call.name or "",
            "" if self.shared else call.client,
        )
        request = call.request
        kept = (
            self._kept
            if self.shared or request.stateless
            else self._per_session.setdefault(request.session, {})
        )
        now = time.monotonic()
        found = kept.get(key)
        if found is not None and found[0] > now:
            return found[1]
        result = await call_next(call)
        if getattr(result, "result_type", None) != "input_required":
            kept[key] = (now + self.ttl, result)
        return result

    def invalidate(self, uri: str | None = None) -> None:
        """Drop the entries of ``uri`` (a resource read), or all (None)."""
        tables = [self._kept, *self._per_session.values()]
        for kept in tables:
            if uri is None:
                kept.clear()
                continue
            for key in [key for key in kept if key[0] == "resources/read" and key[2] == uri]:
                del kept[key]
