"""DNS-rebinding protection: the Host and Origin values an HTTP app accepts.

A page of another site that a browser resolves to this server's address (DNS rebinding)
still sends its own name as Host and its own origin as Origin: refusing both unless they
are the names the server is served under keeps such pages out. By default only local
names pass (any port); a server reachable under other names lists them.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence

LOCAL_HOSTS = ("localhost", "127.0.0.1", "[::1]")

# A host with an optional numeric port: a bracketed IPv6 address or a name.
_HOST = re.compile(r"(\[[0-9a-f:.]+\]|[^\[\]:/@\s]+)(?::[0-9]{1,5})?")


@functools.lru_cache(maxsize=256)  # a server sees few Host values; the regex ran on every request
def host_name(host: str) -> str | None:
    """The host of a Host header (or of an origin), lowercased, without its
    port; None unless it is just that (so ``[::1]evil`` or
    ``localhost:80@evil`` never pass for a local name)."""
    match = _HOST.fullmatch(host.strip().lower())
    return match.group(1) if match else None


def host_allowed(host: str, allowed: set[str] | None) -> bool:
    if allowed is not None:
        return host.lower() in allowed or host_name(host) in allowed
    return host_name(host) in LOCAL_HOSTS


def origin_allowed(origin: str, allowed: set[str] | None) -> bool:
    origin = origin.lower().rstrip("/")
    if allowed is not None:
        return origin in allowed
    scheme, _, rest = origin.partition("://")
    return scheme in ("http", "https") and host_name(rest) in LOCAL_HOSTS


class RebindingGuard:
    """The Host and Origin values an app accepts (None: local names only)."""

    __slots__ = ("allowed_hosts", "allowed_origins")

    def __init__(
        self, allowed_hosts: Sequence[str] | None, allowed_origins: Sequence[str] | None
    ) -> None:
        self.allowed_hosts = None if allowed_hosts is None else {h.lower() for h in allowed_hosts}
        self.allowed_origins = (
            None if allowed_origins is None else {o.lower().rstrip("/") for o in allowed_origins}
        )

    def refusal(self, headers: dict[str, str]) -> str | None:
        """Why a request with these headers is refused (403), if it is."""
        host = headers.get("host", "")
        if not host_allowed(host, self.allowed_hosts):
            return f"Forbidden: host {host!r} is not allowed"
        origin = headers.get("origin")
        if origin is not None and not origin_allowed(origin, self.allowed_origins):
            return f"Forbidden: origin {origin!r} is not allowed"
        return None
