"""The app's visibility rules, shared by every worker of a deployment through its store.

With a shared store (``App(store=RedisStore.from_url(url))``), a rule made
for the whole app while it serves (``app.disable(["delete"])`` in a tool, an
admin endpoint) holds on every worker before any client hears of it:

1. the worker making it applies it at once (its own requests see it) and
   appends it to the app's rule log in the store, then announces it on the
   bus;
2. every worker, that one included, applies the rules of the log it has not
   applied yet, in the log's order (so concurrent rules from two workers end
   the same everywhere), and only then tells those of its clients whose view
   changed (``notifications/*/list_changed``), once per session however many
   workers hold a copy of it;
3. a worker that starts later (a restart, a new host) applies the whole log
   before it serves.

What is shared is state (names, tags, shown or hidden), never code: a
function registered with ``app.tool`` while serving exists in the worker
that ran the registration only. That worker announces it to its own clients;
no other worker does, since it does not serve it (see :mod:`.app`). Rules
made before serving (at import, the same in every worker), rules of one
session (``session=ctx``) and those of a mounted app (made on it) stay in
the worker, as without a store.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
from collections.abc import AsyncIterator, Coroutine
from typing import Any, Protocol

import msgspec

from .._server.server import Server
from ..stores import Store, StoreUnavailable
from ..stores._base import current_note
from ._registry import Registry
from ._visibility import KINDS, Visibility

logger = logging.getLogger(__name__)

LOG_TTL = 365 * 24 * 3600.0
"""Seconds the rule log lives after its last rule (a year: rules do not expire)."""
LOG_EVENTS = 100_000
"""Rules kept: a worker starting after more were made would miss the oldest."""


def _lists(server: Server) -> dict[str, tuple[str, ...]]:
    """The lists a client is told about (generated protocol facts), and the
    registry tables each is made of."""
    return {
        kind: tuple(table for table, capability in KINDS.items() if capability == kind)
        for kind in server.bindings.list_changes
    }


class _Rule(msgspec.Struct, array_like=True):
    names: tuple[str, ...]
    tags: tuple[str, ...]
    shown: bool
    token: str  # the making worker's name for it, to find its views from before


class _Note(msgspec.Struct):
    k: str
    a: str = ""


_decode_rule = msgspec.json.Decoder(_Rule)
_decode_note = msgspec.json.Decoder(_Note)

Views = dict[Any, dict[str, frozenset[str]]]


class RulesOf(Protocol):
    """What the sharing needs of the app (an :class:`~mcpbind.app.App`)."""

    name: str
    registry: Registry
    visibility: Visibility

    def server(self) -> Server: ...


class SharedRules:
    """The app-wide rules of ``app``, kept in ``store`` for every worker."""

    def __init__(self, app: RulesOf, store: Store) -> None:
        self.app = app
        self.store = store
        self.log = f"app-rules:{app.name}"
        self.serving = False
        self.applied = 0  # the last rule of the log applied here
        # Views from before a rule made here, by its token, until the log brings it back.
        self.before: dict[str, Views] = {}
        self._lock = asyncio.Lock()
        self._tasks: set[asyncio.Task[None]] = set()
        store.subscribe(self._on_published)

    @contextlib.asynccontextmanager
    async def serve(self, app: object) -> AsyncIterator[None]:
        """Around serving (a child of the app's lifespan): apply the log, then share."""
        try:
            await self.catch_up(notify=False)
        except StoreUnavailable as error:
            logger.warning("%s: the shared rules were not read, %s", self.app.name, error)
        self.serving = True
        try:
            yield None
        finally:
            self.serving = False
            for task in list(self._tasks):
                task.cancel()

    def change(self, names: tuple[str, ...], tags: tuple[str, ...], shown: bool) -> None:
        """Apply an app-wide rule here at once; share it (and tell the clients) when logged."""
        token = secrets.token_hex(8)
        self.before[token] = self.views()
        self.app.visibility.change(None, names, tags, shown)
        self._spawn(self._share(_Rule(names, tags, shown, token)))

    async def _share(self, rule: _Rule) -> None:
        try:
            await self.store.append(self.log, msgspec.json.encode(rule), LOG_TTL, LOG_EVENTS)
            await self.store.publish(msgspec.json.encode({"k": "rules", "a": self.app.name}))
        except StoreUnavailable as error:
            # The rule holds here only; this worker's clients are told now.
            logger.warning(
                "%s: a visibility rule holds on this worker only, %s", self.app.name, error
            )
            before = self.before.pop(rule.token, None)
            if before is not None:
                await self._notify(before, self.views(), None)

    async def _on_published(self, message: bytes) -> None:
        try:
            note = _decode_note.decode(message)
        except msgspec.MsgspecError:
            return
        if note.k != "rules" or note.a != self.app.name or not self.serving:
            return
        try:
            await self.catch_up(notify=True)
        except StoreUnavailable as error:
            logger.warning("%s: the shared rules were not read, %s", self.app.name, error)

    async def catch_up(self, notify: bool) -> None:
        """Apply the rules logged since the last one applied here, in order;
        then tell the clients whose view changed."""
        async with self._lock:
            rules: list[tuple[int, _Rule]] = []
            while True:
                after = rules[-1][0] if rules else self.applied
                events, _ = await self.store.read_after(self.log, after, 0)
                for seq, raw in events:
                    with contextlib.suppress(msgspec.MsgspecError):
                        rules.append((seq, _decode_rule.decode(raw)))
                if not events:
                    break
            if not rules:
                return
            # The views clients were last told of: from before the oldest rule made here.
            before = next(
                (self.before.pop(rule.token) for _, rule in rules if rule.token in self.before),
                None,
            )
            if before is None and notify:
                before = self.views()
            for seq, rule in rules:
                self.before.pop(rule.token, None)
                self.app.visibility.change(None, rule.names, rule.tags, rule.shown)
                self.applied = seq
            if notify and before is not None:
                await self._notify(before, self.views(), f"rules:{self.log}:{self.applied}")

    def views(self) -> Views:
        """What the app (None: the listen streams) and each of this worker's sessions see."""
        registry, visibility = self.app.registry, self.app.visibility
        server = self.app.server()
        watched: list[object] = [None, *server.handshake_sessions()]
        return {
            each: {
                kind: frozenset().union(
                    *(visibility.view(each, getattr(registry, table)) for table in tables)
                )
                for kind, tables in _lists(server).items()
            }
            for each in watched
        }

    async def _notify(self, before: Views, after: Views, note: str | None) -> None:
        server = self.app.server()
        token = current_note.set(note)
        try:
            for each, new in after.items():
                old = before.get(each)
                for kind in new:
                    if old is not None and old[kind] == new[kind]:
                        continue
                    if old is None and each is not None:
                        continue  # a session new since: it lists what it sees now
                    if each is None:
                        await server.notify_list_changed_to(kind, [], streams=True)
                    else:
                        await server.notify_list_changed_to(kind, [each])
        finally:
            current_note.reset(token)

    def _spawn(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.get_running_loop().create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
