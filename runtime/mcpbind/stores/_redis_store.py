"""The Redis store: state shared by every worker and host of a deployment.

Sessions are strings with a TTL plus a sorted set of ids by expiry (the cap
is counted there, app-wide); event logs are Redis streams whose entry ids
are the SSE event numbers (``0-<n>``); task snapshots are hashes; messages
to every worker go over one pub/sub channel. Each change that touches more
than one key is one Lua script, so nothing is half-written; the keys of one
script share a hash tag, so a Redis Cluster runs each on one shard.

Needs the ``redis`` extra (``pip install 'mcpbind[redis]'``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import AbstractAsyncContextManager
from typing import Any
from urllib.parse import unquote, urlsplit

import redis.asyncio as aioredis
from redis.asyncio.cluster import RedisCluster
from redis.asyncio.retry import Retry
from redis.asyncio.sentinel import Sentinel
from redis.backoff import ExponentialBackoff
from redis.exceptions import AuthenticationError, MaxConnectionsError, RedisError
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from ._base import Listener, StoreUnavailable
from ._redis_bus import RedisBus

logger = logging.getLogger(__name__)

# KEYS: the set of sessions by expiry, the session's record. ARGV: ttl ms, cap, id, record.
_CREATE_SESSION = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[2]) then return 0 end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[1]), ARGV[3])
redis.call('SET', KEYS[2], ARGV[4], 'PX', ARGV[1])
return 1
"""

# KEYS: as above. ARGV: ttl ms, id.
_TOUCH_SESSION = """
local record = redis.call('GET', KEYS[2])
if not record then
  redis.call('ZREM', KEYS[1], ARGV[2])
  return false
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('PEXPIRE', KEYS[2], ARGV[1])
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[1]), ARGV[2])
return record
"""

# KEYS: as above. ARGV: id.
_DELETE_SESSION = """
redis.call('ZREM', KEYS[1], ARGV[1])
return redis.call('DEL', KEYS[2])
"""

# KEYS: the stream, its counter, the once-key. ARGV: message, ttl ms, max events, once (0/1),
# the log's channel.
_APPEND = """
if ARGV[4] == '1' and not redis.call('SET', KEYS[3], '1', 'NX', 'PX', ARGV[2]) then return 0 end
local n = redis.call('INCR', KEYS[2])
redis.call('XADD', KEYS[1], 'MAXLEN', ARGV[3], '0-' .. n, 'm', ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
redis.call('PEXPIRE', KEYS[2], ARGV[2])
redis.call('PUBLISH', ARGV[5], '')
return n
"""

# KEYS: the stream, its about-key. ARGV: seq, has message (0/1), message,
# end (0/1), ttl ms, max events, about ('' for none), the log's channel,
# push the expiry back (0/1). An id at or below the last fails the XADD
# alone: written already (a retried or second writer). One script rather
# than a MULTI block: one command to send and one reply to parse, which is
# most of what a write costs the worker. The PUBLISH wakes the followers of
# the log on every worker (one pub/sub connection each) in the same round trip.
_APPEND_AT = """
local fields = {}
if ARGV[2] == '1' then fields[#fields + 1] = 'm'; fields[#fields + 1] = ARGV[3] end
if ARGV[4] == '1' then fields[#fields + 1] = 'e'; fields[#fields + 1] = '1' end
local added = redis.pcall('XADD', KEYS[1], 'MAXLEN', ARGV[6], '0-' .. ARGV[1], unpack(fields))
if ARGV[9] == '1' then
  redis.call('PEXPIRE', KEYS[1], ARGV[5])
  if ARGV[7] ~= '' then redis.call('SET', KEYS[2], ARGV[7], 'PX', ARGV[5], 'NX') end
end
if type(added) ~= 'table' then redis.call('PUBLISH', ARGV[8], '') end
return 1
"""

# KEYS: the stream. ARGV: after (the last id the reader has). The entries
# after it, and whether the log is ended at or before ``after``: a stream
# whose last event carried the end mark has nothing after it, yet is over.
_READ_AFTER = """
local entries = redis.call('XRANGE', KEYS[1], '(0-' .. ARGV[1], '+', 'COUNT', ARGV[2])
if #entries > 0 then return {entries, 0} end
local last = redis.call('XREVRANGE', KEYS[1], '+', '-', 'COUNT', 1)
if #last > 0 then
  local fields = last[1][2]
  for i = 1, #fields, 2 do if fields[i] == 'e' then return {entries, 1} end end
end
return {entries, 0}
"""

# KEYS: the lease set. ARGV: member, limit, ttl ms.
_TAKE_LEASE = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if not redis.call('ZSCORE', KEYS[1], ARGV[1]) and redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[2]) then return 0 end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[3]), ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return 1
"""

# KEYS: the lease set. ARGV: ttl ms, members... (only those still held).
_RENEW_LEASES = """
local t = redis.call('TIME')
local until_ = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) + tonumber(ARGV[1])
for i = 2, #ARGV do redis.call('ZADD', KEYS[1], 'XX', until_, ARGV[i]) end
redis.call('PEXPIRE', KEYS[1], ARGV[1])
return 1
"""

# KEYS: the lease set. ARGV: member.
_LEASE_HELD = """
local until_ = redis.call('ZSCORE', KEYS[1], ARGV[1])
if not until_ then return 0 end
local t = redis.call('TIME')
return tonumber(until_) > tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) and 1 or 0
"""

# KEYS: the task's hash. ARGV: snapshot, terminal (0/1), ttl ms (0: none).
_PUT_TASK = """
if redis.call('HGET', KEYS[1], 't') == '1' then return 0 end
redis.call('HSET', KEYS[1], 's', ARGV[1], 't', ARGV[2])
if tonumber(ARGV[3]) > 0 then redis.call('PEXPIRE', KEYS[1], ARGV[3]) end
return 1
"""

_READ_BATCH = 1024  # events of a log handed over per read, at most

DEFAULT_MAX_CONNECTIONS = 32
"""Connections to Redis per worker process (the pub/sub one included)."""
DEFAULT_POOL_TIMEOUT = 5.0
"""Seconds a command waits for a free connection before its request is refused."""


class RedisStore:
    """State shared through one Redis: a single server, a Redis Cluster, or
    the primary a Sentinel names (see :meth:`from_url`). ``prefix`` keeps the
    keys of one deployment apart (the database number too); the channels
    carry both, since Redis pub/sub spans databases.

    A worker holds a bounded number of connections whatever it serves: one
    pub/sub connection carries every subscription (the bus, and the event
    logs that streams here follow), and commands share at most
    ``max_connections`` connections, for which a command waits up to
    ``pool_timeout`` seconds instead of failing at once."""

    shared = True

    def __init__(
        self,
        client: aioredis.Redis | RedisCluster,
        *,
        prefix: str = "mcp:",
        max_connections: int | None = None,
        pool_timeout: float = DEFAULT_POOL_TIMEOUT,
    ) -> None:
        """``client``: a redis-py asyncio client. ``max_connections``: commands
        in flight at once in this process (each holds a connection), waiting
        up to ``pool_timeout`` seconds for their turn; None leaves the bound to
        the client's pool (a ``BlockingConnectionPool`` waits by itself; the
        pools of a cluster or a Sentinel fail at once when full, as does
        redis-py's default ``ConnectionPool``: 100 connections in redis-py 8)."""
        if "{" in prefix or "}" in prefix:
            raise ValueError(
                f"a key prefix must not contain braces (Redis Cluster hash tags): {prefix!r}"
            )
        self.client = client
        self.prefix = prefix
        # Told of each round trip to Redis (True when it succeeded): telemetry's counters.
        self.round_trip_observers: list[Callable[[bool], None]] = []
        pool = getattr(client, "connection_pool", None)
        db = pool.connection_kwargs.get("db", 0) if pool is not None else 0
        # Braces: Redis Cluster hash tags. A script's keys must share a slot,
        # so the session set and records live in one slot, and each event
        # log with its counter and once-keys in the log's own.
        self._sessions = f"{prefix}{{sessions}}"
        self._channels = f"{prefix}{db}:"
        self.bus = RedisBus(client, f"{self._channels}bus")
        self._max_connections = max_connections
        self._pool_timeout = pool_timeout
        self._turns = None if max_connections is None else asyncio.Semaphore(max_connections)
        self._create = client.register_script(_CREATE_SESSION)
        self._touch = client.register_script(_TOUCH_SESSION)
        self._delete = client.register_script(_DELETE_SESSION)
        self._append = client.register_script(_APPEND)
        self._append_at = client.register_script(_APPEND_AT)
        self._read_after = client.register_script(_READ_AFTER)
        self._take_lease = client.register_script(_TAKE_LEASE)
        self._renew_leases = client.register_script(_RENEW_LEASES)
        self._lease_held = client.register_script(_LEASE_HELD)
        self._put_task = client.register_script(_PUT_TASK)

    @classmethod
    def from_url(
        cls,
        url: str,
        *,
        prefix: str = "mcp:",
        max_connections: int = DEFAULT_MAX_CONNECTIONS,
        pool_timeout: float = DEFAULT_POOL_TIMEOUT,
        **options: Any,
    ) -> RedisStore:
        """A store on the Redis that ``url`` names:

        * ``redis://[[user]:password@]host:6379/0`` (``rediss://`` for TLS): one server;
        * ``redis+cluster://[[user]:password@]host:port`` (``rediss+cluster://``): a Redis
          Cluster, reached first through the node named (any one; the others are found);
        * ``redis+sentinel://[[user]:password@]host:26379[,host:port...]/service[/db]``
          (``rediss+sentinel://``): the primary that the Sentinels name for ``service``,
          followed through failovers (the password is the primary's; the Sentinels' own
          settings go in ``sentinel_kwargs``).

        ``max_connections``: command connections of this process at most (the
        pub/sub connection is one of them; per node of a cluster); ``pool_timeout``:
        seconds a command waits for one of them when all are busy, before the
        request is refused. ``options`` go to redis-py's client."""
        scheme, _, rest = url.partition("://")
        base, _, kind = scheme.partition("+")
        if base not in ("redis", "rediss") or kind not in ("", "cluster", "sentinel"):
            raise ValueError(
                f"not a Redis URL: {url!r} (redis://, rediss://, redis+cluster://,"
                " redis+sentinel:// and their rediss+ forms)"
            )
        options.setdefault("socket_connect_timeout", 2.0)
        options.setdefault("socket_timeout", 10.0)
        # A pooled connection that Redis closed (a restart, a failover) is
        # replaced on the spot: a request fails only while Redis is down.
        # Through a failover the Sentinels take a few seconds to name the new
        # primary: more, slower retries there than for a restart.
        attempts = Retry(ExponentialBackoff(cap=1.0, base=0.1), 6) if kind == "sentinel" else None
        options.setdefault("retry", attempts or Retry(ExponentialBackoff(cap=0.5, base=0.05), 2))
        options.setdefault("retry_on_error", [RedisConnectionError, RedisTimeoutError])
        # One connection is the pub/sub one; the others take turns for commands.
        turns = max(1, max_connections - 1)
        if kind == "cluster":
            cluster = RedisCluster.from_url(
                f"{base}://{rest}", max_connections=max_connections, **options
            )
            return cls(cluster, prefix=prefix, max_connections=turns, pool_timeout=pool_timeout)
        if kind == "sentinel":
            sentinels, service, settings = _sentinel_url(base, rest)
            options.setdefault(
                "sentinel_kwargs",
                {"socket_connect_timeout": 2.0, "socket_timeout": 2.0, "ssl": base == "rediss"},
            )
            sentinel = Sentinel(sentinels, **settings, **options)  # type: ignore[no-untyped-call]
            primary = sentinel.master_for(service, max_connections=max_connections)
            return cls(primary, prefix=prefix, max_connections=turns, pool_timeout=pool_timeout)
        pool = aioredis.BlockingConnectionPool.from_url(
            url, max_connections=max_connections, timeout=pool_timeout, **options
        )
        return cls(aioredis.Redis(connection_pool=pool), prefix=prefix, pool_timeout=pool_timeout)

    @contextlib.asynccontextmanager
    async def _guard(self) -> AsyncIterator[None]:
        turns = self._turns
        if turns is not None:
            try:
                await asyncio.wait_for(turns.acquire(), self._pool_timeout)
            except TimeoutError:
                self._observed(False)
                raise StoreUnavailable(self._busy("no turn came")) from None
        ok = False
        try:
            yield
            ok = True
        except MaxConnectionsError as error:
            raise StoreUnavailable(self._busy(str(error))) from None
        except AuthenticationError as error:
            raise StoreUnavailable(
                f"the shared store (Redis) refused this worker's credentials: {error}"
            ) from None
        except (RedisConnectionError, RedisTimeoutError, OSError) as error:
            if isinstance(error.__cause__, asyncio.TimeoutError) and "No connection" in str(error):
                raise StoreUnavailable(self._busy(str(error))) from None
            raise StoreUnavailable(f"the shared store (Redis) is unreachable: {error}") from None
        except RedisError as error:
            # An error answer too (a ResponseError: out of memory, a replica's READONLY
            # during a failover, or a connection's set-up answered out of turn while
            # Redis restarts): the store cannot serve this now, whatever the command.
            raise StoreUnavailable(f"the shared store (Redis) failed: {error}") from None
        finally:
            if turns is not None:
                turns.release()
            self._observed(ok)

    def _observed(self, ok: bool) -> None:
        for observer in self.round_trip_observers:
            observer(ok)

    def _busy(self, error: str) -> str:
        limit = self._max_connections
        if limit is None:
            limit = getattr(getattr(self.client, "connection_pool", None), "max_connections", 0)
        return (
            "the shared store (Redis) is reachable but every connection of this worker is busy"
            f" (max_connections={limit}; none free within {self._pool_timeout:g} s): {error}"
        )

    async def start(self) -> None:
        await self.bus.start()

    async def close(self) -> None:
        await self.bus.close()
        await self.client.aclose()
        pool = getattr(self.client, "connection_pool", None)
        if pool is not None:
            with contextlib.suppress(Exception):
                await pool.disconnect()

    # sessions ---------------------------------------------------------

    def _session_key(self, session_id: str) -> str:
        return f"{self._sessions}:{session_id}"

    async def create_session(self, session_id: str, record: bytes, ttl: float, cap: int) -> bool:
        async with self._guard():
            keys = [self._sessions, self._session_key(session_id)]
            return bool(await self._create(keys=keys, args=[_ms(ttl), cap, session_id, record]))

    async def touch_session(self, session_id: str, ttl: float) -> bytes | None:
        async with self._guard():
            found = await self._touch(
                keys=[self._sessions, self._session_key(session_id)], args=[_ms(ttl), session_id]
            )
            return found if isinstance(found, bytes) else None

    async def update_session(self, session_id: str, record: bytes, ttl: float) -> None:
        async with self._guard():
            await self.client.set(self._session_key(session_id), record, px=_ms(ttl), xx=True)

    async def delete_session(self, session_id: str) -> bool:
        async with self._guard():
            return bool(
                await self._delete(
                    keys=[self._sessions, self._session_key(session_id)], args=[session_id]
                )
            )

    async def count_sessions(self) -> int:
        async with self._guard():
            return int(
                await self.client.zcount(self._sessions, "(" + str(await self._now_ms()), "+inf")
            )

    async def _now_ms(self) -> int:
        seconds, micros = await self.client.time()
        return int(seconds) * 1000 + int(micros) // 1000

    # event logs -------------------------------------------------------

    def _log_key(self, stream: str) -> str:
        return f"{self.prefix}ev:{{{stream}}}"

    async def append(
        self, stream: str, message: bytes, ttl: float, max_events: int, once: str | None = None
    ) -> int:
        key = self._log_key(stream)
        keys = [key, key + ":n", f"{key}:once:{once or ''}"]
        async with self._guard():
            return int(
                await self._append(
                    keys=keys,
                    args=[
                        message,
                        _ms(ttl),
                        max_events,
                        int(once is not None),
                        self._log_channel(stream),
                    ],
                )
            )

    async def has_stream(self, stream: str) -> bool:
        key = self._log_key(stream)
        async with self._guard():
            return bool(await self.client.exists(key, key + ":about"))

    async def declare_stream(self, stream: str, about: bytes, ttl: float) -> None:
        async with self._guard():
            await self.client.set(self._log_key(stream) + ":about", about, px=_ms(ttl), nx=True)

    async def append_at(
        self,
        stream: str,
        seq: int,
        message: bytes | None,
        ttl: float,
        max_events: int,
        end: bool = False,
        about: bytes | None = None,
    ) -> None:
        key = self._log_key(stream)
        fields: dict[Any, Any] = {} if message is None else {"m": message}
        if message is None or end:
            fields["e"] = b"1"
        renew = seq == 1 or "e" in fields or seq % 64 == 0 or about is not None
        args: list[bytes | int | str] = [
            seq,
            int(message is not None),
            message or b"",
            int("e" in fields),
            _ms(ttl),
            max_events,
            about or b"",
            self._log_channel(stream),
            int(renew),
        ]
        async with self._guard():
            await self._append_at(keys=[key, key + ":about"], args=args)

    async def stream_about(self, stream: str) -> bytes | None:
        async with self._guard():
            found: Any = await self.client.get(self._log_key(stream) + ":about")
        return bytes(found) if found is not None else None

    async def read_after(
        self, stream: str, after: int, wait: float
    ) -> tuple[list[tuple[int, bytes]], bool]:
        # No blocking XREAD: it would hold a pooled connection per open
        # stream. The wait is on this worker's pub/sub connection instead,
        # subscribed before the read so that no write after it goes unseen.
        if wait <= 0:
            return await self._read_now(stream, after)
        channel = self._log_channel(stream)
        async with self.bus.follow(channel):
            written = self.bus.written[channel]
            written.clear()
            events, ended = await self._read_now(stream, after)
            if events or ended:
                return events, ended
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(written.wait(), wait)
            return await self._read_now(stream, after)

    async def _read_now(self, stream: str, after: int) -> tuple[list[tuple[int, bytes]], bool]:
        async with self._guard():
            found: Any = await self._read_after(
                keys=[self._log_key(stream)], args=[after, _READ_BATCH]
            )
        entries, ended_before = found
        events: list[tuple[int, bytes]] = []
        ended = bool(ended_before)
        for entry_id, raw in entries:
            fields = dict(zip(raw[::2], raw[1::2], strict=True))
            if b"m" in fields:
                events.append((int(entry_id.split(b"-", 1)[1]), fields[b"m"]))
            if b"e" in fields:
                ended = True
        return events, ended

    def _log_channel(self, stream: str) -> str:
        return f"{self._channels}ev:{stream}"

    async def set_mark(self, key: str, value: int, ttl: float) -> None:
        async with self._guard():
            await self.client.set(f"{self.prefix}mark:{key}", value, px=_ms(ttl))

    async def get_mark(self, key: str) -> int:
        async with self._guard():
            found = await self.client.get(f"{self.prefix}mark:{key}")
        return int(found) if found is not None else 0

    # leases -----------------------------------------------------------

    def _lease_key(self, name: str) -> str:
        return f"{self.prefix}lease:{{{name}}}"

    async def take_lease(self, name: str, member: str, limit: int, ttl: float) -> bool:
        async with self._guard():
            return bool(
                await self._take_lease(keys=[self._lease_key(name)], args=[member, limit, _ms(ttl)])
            )

    async def renew_leases(self, name: str, members: Sequence[str], ttl: float) -> None:
        if members:
            async with self._guard():
                await self._renew_leases(keys=[self._lease_key(name)], args=[_ms(ttl), *members])

    async def lease_held(self, name: str, member: str) -> bool:
        async with self._guard():
            return bool(await self._lease_held(keys=[self._lease_key(name)], args=[member]))

    async def drop_lease(self, name: str, member: str) -> None:
        async with self._guard():
            await self.client.zrem(self._lease_key(name), member)

    # tasks ------------------------------------------------------------

    async def put_task(
        self, task_id: str, snapshot: bytes, terminal: bool, ttl: float | None
    ) -> None:
        async with self._guard():
            await self._put_task(
                keys=[f"{self.prefix}t:{task_id}"],
                args=[snapshot, int(terminal), 0 if ttl is None else _ms(ttl)],
            )

    async def get_task(self, task_id: str) -> bytes | None:
        async with self._guard():
            found = await self.client.hget(f"{self.prefix}t:{task_id}", "s")
        return found if isinstance(found, bytes) else None

    # bus --------------------------------------------------------------

    async def publish(self, message: bytes) -> None:
        async with self._guard():
            await self.client.publish(self.bus.channel, message)

    def subscribe(self, listener: Listener) -> None:
        self.bus.listeners.append(listener)

    # mailboxes --------------------------------------------------------

    def _box_channel(self, box: str) -> str:
        return f"{self._channels}box:{box}"

    async def post(self, box: str, message: bytes) -> None:
        async with self._guard():
            await self.client.publish(self._box_channel(box), message)

    def hold_box(self, box: str, listener: Listener) -> AbstractAsyncContextManager[None]:
        return self.bus.hold(self._box_channel(box), listener)


def _ms(seconds: float) -> int:
    return max(1, int(seconds * 1000))


def _sentinel_url(base: str, rest: str) -> tuple[list[tuple[str, int]], str, dict[str, Any]]:
    """The Sentinels, the service and the primary's connection settings of
    ``redis+sentinel://[[user]:password@]host:port[,host:port...]/service[/db]``."""
    parts = urlsplit(f"{base}://{rest}")
    userinfo, _, hosts = parts.netloc.rpartition("@")
    sentinels: list[tuple[str, int]] = []
    for host in hosts.split(","):
        name, _, port = host.rpartition(":")
        if not name or "]" in port:  # no port, or the end of a bracketed IPv6 address
            name, port = host, ""
        sentinels.append((name.strip("[]"), int(port) if port else 26379))
    path = [part for part in parts.path.split("/") if part]
    if not path or len(path) > 2 or not hosts or parts.query:
        raise ValueError(
            "a Sentinel URL names its Sentinels and the service, and nothing else: "
            "redis+sentinel://host:26379[,host:port...]/service[/db] (TLS settings go in"
            " from_url's keywords)"
        )
    settings: dict[str, Any] = {"db": int(path[1]) if len(path) == 2 else 0}
    if userinfo:
        user, _, password = userinfo.partition(":")
        if user:
            settings["username"] = unquote(user)
        if password:
            settings["password"] = unquote(password)
    if base == "rediss":
        settings["ssl"] = True
    return sentinels, path[0], settings
