"""The one pub/sub connection of a worker on Redis: it carries the bus of the
deployment (messages to every worker) and the channels of the event logs that
streams here follow, subscribed while they are followed, so that a worker
holds one connection for pub/sub whatever the number of its open streams."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from typing import Any

import redis.asyncio as aioredis
from redis.asyncio.cluster import RedisCluster

from ._base import Listener, StoreUnavailable

logger = logging.getLogger(__name__)

_RETRY_FIRST = 0.2
_RETRY_MOST = 2.0
_CONFIRM_WAIT = 5.0  # seconds Redis has to confirm a subscription
_ASK_AGAIN = 0.5  # seconds after which a subscription not confirmed yet is asked for again


class RedisBus:
    """Subscribes ``channel`` (the bus, for the listeners) and the channels
    followed (:meth:`follow`), on one connection of ``client``, reconnecting
    across outages."""

    def __init__(self, client: aioredis.Redis | RedisCluster, channel: str) -> None:
        self.client = client
        self.channel = channel
        self.listeners: list[Listener] = []
        self._subscriber: asyncio.Task[None] | None = None
        self._subscribed = asyncio.Event()
        self._pubsub: aioredis.client.PubSub | None = None
        # The channels followed here: how many readers wait on each, the event
        # set when something is published on it, and those Redis confirmed.
        self.following: dict[str, int] = {}
        self.written: dict[str, asyncio.Event] = {}
        self._confirmed: dict[str, asyncio.Event] = {}
        self.boxes: dict[str, Listener] = {}  # channels whose messages go to a listener here

    async def start(self) -> None:
        if self._subscriber is None:
            self._subscriber = asyncio.get_running_loop().create_task(
                self._deliver(), name="mcp-store-bus"
            )
        await self._subscribed.wait()

    async def close(self) -> None:
        if self._subscriber is not None:
            self._subscriber.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._subscriber
            self._subscriber = None

    @contextlib.asynccontextmanager
    async def follow(self, channel: str) -> AsyncIterator[None]:
        """Hold a subscription to ``channel`` (counted: readers of one log share it)."""
        if self._subscriber is None:
            await self.start()  # the pub/sub connection carries the wait
        count = self.following.get(channel, 0)
        self.following[channel] = count + 1
        if count == 0:
            self.written[channel] = asyncio.Event()
            self._confirmed[channel] = asyncio.Event()
            await _ask(self._pubsub, "subscribe", channel)
        try:
            confirmed = self._confirmed[channel]
            loop = asyncio.get_running_loop()
            deadline = loop.time() + _CONFIRM_WAIT
            while not confirmed.is_set():
                left = deadline - loop.time()
                if left <= 0:
                    raise StoreUnavailable(
                        "the shared store (Redis) did not confirm a subscription"
                    )
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(confirmed.wait(), min(left, _ASK_AGAIN))
                if not confirmed.is_set():
                    # Lost with the connection, or asked while it was down and
                    # redis-py made it again in place (it subscribes again only
                    # what it had confirmed): asking twice is harmless.
                    await _ask(self._pubsub, "subscribe", channel)
            yield
        finally:
            left = self.following[channel] - 1
            if left:
                self.following[channel] = left
            else:
                del self.following[channel], self.written[channel], self._confirmed[channel]
                with contextlib.suppress(StoreUnavailable):
                    await _ask(self._pubsub, "unsubscribe", channel)

    @contextlib.asynccontextmanager
    async def hold(self, channel: str, listener: Listener) -> AsyncIterator[None]:
        """Hand every message published on ``channel`` to ``listener`` while held
        (entered once Redis confirmed the subscription)."""
        self.boxes[channel] = listener
        try:
            async with self.follow(channel):
                yield
        finally:
            if self.boxes.get(channel) is listener:
                del self.boxes[channel]

    async def _deliver(self) -> None:
        """Hand every published message to the listeners, and wake the readers
        of a log written to; across an outage, reconnect with growing pauses
        and say so once, not per attempt."""
        pause = _RETRY_FIRST
        down = False
        while True:
            try:
                pubsub = await self._new_pubsub()
                try:
                    await pubsub.subscribe(self.channel, *self.following)
                    self._pubsub = pubsub
                    if down:
                        logger.warning(
                            "the shared store (Redis) is reachable again; change notifications resume"
                        )
                        down, pause = False, _RETRY_FIRST
                    while True:
                        message = await pubsub.get_message(timeout=5.0)
                        if message is not None:
                            await self._dispatch(message)
                finally:
                    self._pubsub = None
                    for confirmed in self._confirmed.values():
                        confirmed.clear()
                    with contextlib.suppress(Exception):
                        await pubsub.aclose()  # type: ignore[no-untyped-call]
            except asyncio.CancelledError:
                raise
            except (
                Exception
            ) as error:  # noqa: BLE001 - whatever a lost connection raises (see _ask)
                if not down:
                    logger.warning("the shared store (Redis) is unreachable (%s); retrying", error)
                    down = True
                self._subscribed.set()  # requests get their own clear errors meanwhile
                # Readers waiting on a log re-read it (and get the outage's error).
                for written in self.written.values():
                    written.set()
                await asyncio.sleep(pause)
                pause = min(pause * 2, _RETRY_MOST)

    async def _new_pubsub(self) -> aioredis.client.PubSub:
        client = self.client
        if isinstance(client, RedisCluster):
            # Classic pub/sub messages reach every node of a cluster: one
            # connection to any primary hears them all (after a node's loss the
            # next one is to another).
            await client.initialize()
            return client.pubsub(node=client.get_random_node())
        return client.pubsub()

    async def _dispatch(self, message: dict[str, Any]) -> None:
        kind = message.get("type")
        channel = message.get("channel")
        name = channel.decode() if isinstance(channel, bytes) else str(channel)
        if kind == "subscribe":
            if name == self.channel:
                self._subscribed.set()
            confirmed = self._confirmed.get(name)
            if confirmed is not None:
                confirmed.set()
            # A write may have come before the subscription: readers look again.
            written = self.written.get(name)
            if written is not None:
                written.set()
        elif kind == "message":
            if name == self.channel:
                for listener in list(self.listeners):
                    try:
                        await listener(message["data"])
                    except Exception:
                        logger.exception("a listener of the shared store failed")
            else:
                box = self.boxes.get(name)
                if box is not None:
                    try:
                        await box(message["data"])
                    except Exception:
                        logger.exception("a listener of the shared store failed")
                written = self.written.get(name)
                if written is not None:
                    written.set()


async def _ask(pubsub: aioredis.client.PubSub | None, verb: str, channel: str) -> None:
    """Subscribe or unsubscribe on the pub/sub connection while it is up.

    Never more: the connection is lost and made again by ``_deliver`` alone,
    which subscribes every channel followed then. redis-py would reconnect it
    from here too (to send, or to retry a send that failed) while ``_deliver``
    reads or reconnects it, and a connection two coroutines use while it is
    lost fails in ways no error class of redis-py covers: a second reader
    (RuntimeError), a write on a transport uvloop closed (RuntimeError), a
    writer the other dropped (AttributeError). Whatever this raises, the
    connection is being lost: ``_deliver`` makes a new one, and a follower
    waiting for its subscription to be confirmed gets StoreUnavailable."""
    connection = None if pubsub is None else pubsub.connection
    if pubsub is None or connection is None or not connection.is_connected:
        return
    try:
        if verb == "subscribe":
            await pubsub.subscribe(channel)
        else:
            await pubsub.unsubscribe(channel)
    except Exception as error:  # noqa: BLE001 - see above
        logger.debug("the pub/sub connection failed to %s %s: %r", verb, channel, error)
