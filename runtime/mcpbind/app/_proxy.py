"""Proxying: any MCP server served as part of an app, under a prefix.

    app = App("gateway")
    app.proxy(StdioServerParameters("npx", ["@modelcontextprotocol/server-everything"]),
              prefix="everything")
    app.proxy("https://example.com/mcp", prefix="remote")
    app.proxy({"command": "uvx", "args": ["mcp-server-time"]}, prefix="time")

The backend is reached by a client session of ours (stdio, Streamable HTTP or
an ``mcpServers`` entry, read as the host reads it), opened with the app's
lifespan and closed with it. What it serves is listed under the prefix rule
of :mod:`.mount` (tool ``echo`` → ``everything_echo``, resource
``demo://r/1`` → ``demo://everything/r/1``); calls, reads, prompts and
completions are forwarded with the backend's own names.

Each side speaks its own revision. The backend's answers are rebuilt as the
front revision's types: members the front revision lacks are dropped, and a
content block it lacks goes through the app layer's content rule
(:func:`mcpbind.app._media.to_block`: audio becomes an embedded resource
blob before 2025-03-26, a resource link becomes text before 2025-06-18),
and what they say of the backend is put in the front's terms (links under
the prefix, the backend's task id dropped: :mod:`.backend_results`). A tool's
MCP Apps link (``_meta.ui.resourceUri``) follows the prefix rule like the
``ui://`` resource it names; the backend is told the gateway speaks MCP Apps,
and front clients without the extension get the links withheld (:mod:`.ui`).
Progress and log messages the backend sends while answering go to the front
request that caused them; cancelling the front request cancels the backend
call; the backend's list-changed notifications refresh the app's lists and
reach its clients as its own.

The backend's sampling, elicitation and roots requests are asked of the
front client (:mod:`.relay`); the front's subscriptions reach the backend, and
a 2026-07-28 backend is listened to for its changes
(:mod:`.backend_subscriptions`). The session is supervised as a host's
(:class:`~mcpbind.host._connection.Connection`, :mod:`.supervision`): a
backend that cannot be started is reported and tried again, without stopping
the app; one that is lost, or fails the health checks of its ``pingInterval``
(each waiting ``healthTimeout``), leaves the app's lists until it is connected
again; a call it does not answer within its ``requestTimeout`` fails with an
error naming it. Configured secrets can be taken out of what it relays
(:mod:`.redaction`).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import fnmatch
import logging
import re
from collections.abc import (
    Awaitable,
    Callable,
    Coroutine,
    Iterable,
    Mapping,
)
from typing import Any, Literal

import msgspec

from .. import codec
from .._client.client import Client, ClientSession
from .._core import jsonrpc, lifecycle
from .._core.jsonrpc import McpError, RequestId
from ..host._connection import Connection, RetryPolicy
from ..methods import RequestContext
from ._audit import Audit
from ._backend_results import linked_prompt, own_call_result, with_log_level
from ._backend_subscriptions import Subscriptions
from ._completion import Completer, completion_key
from ._flavor import Flavor
from ._media import to_block
from ._mount import prefixed_name, prefixed_uri, unprefixed_uri
from ._pinning import Pins
from ._redaction import Redaction
from ._registry import ITEMS
from ._relay import BackendHandlers, InTask, Rounds, WaitingCalls
from ._resources import UriTemplate
from ._supervision import Supervision, backend_config
from ._tools import check_scopes
from ._ui import UI_EXTENSION_ID, UI_MIME_TYPE, relinked
from ._visibility import KINDS

logger = logging.getLogger(__name__)

_PREFIX = re.compile(r"^[A-Za-z0-9][A-Za-z0-9.-]*$")  # the rule of mount prefixes

# Front request members that belong to the front hop only.
# (A front's task is the app's own: the backend gets the call, or its own task.)
_HOP_MEMBERS = ("_meta", "inputResponses", "requestState", "task")


def _list_request(revision: lifecycle.Revision, kind: str) -> tuple[str, str] | None:
    """The request listing a registry kind's items in ``revision``, and the
    result member holding them (from the generated method specs)."""
    for spec in revision.all_methods.values():
        if spec.page_items is not None and spec.page_items[1].__name__ == ITEMS[kind]:
            return spec.method, spec.page_items[0]
    return None


class Proxy:
    """One backend server served as part of an app: keeps the app's registry in step with it.

    The backend's session is supervised as a host's are
    (:class:`mcpbind.host._connection.Connection`): lost or failing its
    health checks, its items leave the app's lists (its clients are told) and
    it is connected again after a growing delay, its items coming back."""

    # The parent is an App (typed Any: .app imports this module).
    def __init__(
        self,
        parent: Any,
        source: object,
        prefix: str,
        *,
        allow_tools: tuple[str, ...] | None = None,
        deny_tools: tuple[str, ...] = (),
        retry: RetryPolicy | None = None,
        pins: Pins | None = None,
        audit: Audit | None = None,
        scopes: Mapping[str, tuple[str, ...]] | None = None,
        redact: bool | Iterable[str] = False,
    ) -> None:
        if not isinstance(prefix, str) or not _PREFIX.match(prefix):
            raise ValueError(
                f"proxy prefix {prefix!r}: letters, digits, '.' and '-', starting with a letter or digit"
            )
        self.parent = parent
        self.source = source
        self.prefix = prefix
        self.allow_tools = allow_tools
        self.deny_tools = deny_tools
        self.config, stderr = backend_config(source, prefix)
        self.supervision = Supervision(prefix, self.config, stderr)
        parent.registry.backends[prefix] = lambda: self.problem
        self.retry = retry or RetryPolicy()
        handlers = BackendHandlers(self)
        # roots.listChanged: the front's roots/list_changed is passed on (see .relay);
        # elicitation in both modes: a backend offers what needs URL mode only to a
        # client that declares it, and each question goes to a front client that has its mode.
        # MCP Apps: the backend lists its UI links to the gateway, which serves them
        # under the prefix and withholds them from front clients without the extension.
        self.client = Client(
            name="mcp-runtime-proxy",
            version="1",
            handlers=handlers,
            package=None,
            capabilities={"roots": {"listChanged": True}, "elicitation": {"form": {}, "url": {}}},
            extensions={UI_EXTENSION_ID: {"mimeTypes": [UI_MIME_TYPE]}},
            telemetry=parent.telemetry,
        )
        parent.registry.roots_watchers.append(handlers.roots_changed)
        self.pins = pins
        self.audit = audit
        self.scopes = dict(scopes or {})
        # True: the entry's own credentials (its env and headers values).
        redaction = Redaction.of_entry(self.config) if redact is True else Redaction(redact or ())
        self.redact = redaction if redaction else None
        self.session: ClientSession | None = None
        self._keys: dict[str, set[str]] = {kind: set() for kind in ITEMS}
        self._completions: set[tuple[str, str, str]] = set()
        self._in_flight: list[RequestContext | Rounds] = []
        self._forwarded: dict[RequestId, RequestContext | Rounds] = {}  # by the backend call's id
        self.waiting = WaitingCalls()  # 2026-07-28 calls waiting for the next round
        self._withdrawn: set[str] = set()  # its tools while it is lost
        self.subscriptions = Subscriptions(self, parent.registry)
        self._tasks: set[asyncio.Task[None]] = set()

    # ------------------------------------------------------------ connection

    async def start(self) -> None:
        """Connect to the backend, returning once the first attempt has succeeded
        or failed (a backend that cannot be reached is logged and tried again:
        see :class:`.supervision.Supervision`)."""
        await self.supervision.start(self.client, self.retry, self._ready, self._lost)

    async def stop(self) -> None:
        """Close the backend's session (ending a stdio backend's process group)."""
        try:
            await self.supervision.stop()
        finally:
            self._clear()

    @property
    def connection(self) -> Connection | None:
        return self.supervision.connection

    @property
    def problem(self) -> str | None:
        """Why the backend is not connected (None while it is)."""
        return self.supervision.problem

    async def _ready(self, connection: Connection) -> None:
        session = self.session = connection.session
        if self.pins is not None and session is not None:
            info = msgspec.to_builtins(session.server_info) if session.server_info else {}
            self.pins.connected(self.prefix, info, session.protocol_version)
        for outer in self._withdrawn:
            self.parent.registry.withdrawn.pop(outer, None)
        self._withdrawn = set()
        await self.subscriptions.before_lists()
        await self.refresh(tuple(ITEMS))
        await self.subscriptions.after_lists()
        if self.session is not None:
            logger.info("proxy %r: connected (%s)", self.prefix, self.session.protocol_version)

    def _lost(self, connection: Connection) -> None:
        if self.session is None or self.connection is None:
            return
        why = self.problem or "connection lost"
        logger.warning(
            "proxy %r: %s; its items are withdrawn until it is connected again", self.prefix, why
        )
        self._withdrawn = set(self._keys["tools"])
        for outer in self._withdrawn:
            self.parent.registry.withdrawn[outer] = (
                f"the server behind {self.prefix!r} is not connected: {why}"
            )
        self._clear()

    def _clear(self) -> None:
        self.session = None
        self.subscriptions.lost()
        for task in list(self._tasks):
            task.cancel()
        for kind in ITEMS:
            self._replace(kind, {})
        self._sync_completions()

    def _why_not_connected(self) -> str:
        problem = self.problem
        return f"the server behind {self.prefix!r} is not connected" + (
            f": {problem}" if problem else ""
        )

    def _request(self, method: str, wire: Mapping[str, object]) -> tuple[object, object]:
        session = self.session
        if session is None:
            raise McpError(jsonrpc.INTERNAL_ERROR, self._why_not_connected())
        spec = lifecycle.revision(session.protocol_version).all_methods.get(method)
        if spec is None:
            raise McpError(
                jsonrpc.METHOD_NOT_FOUND,
                f"the server behind {self.prefix!r} speaks {session.protocol_version}, without {method}",
            )
        params = codec.convert(dict(wire), spec.params) if spec.params is not None else None
        return spec, params

    async def forward(
        self, method: str, wire: Mapping[str, object], ctx: RequestContext | Rounds | None
    ) -> object:
        """The backend's answer to ``method`` with ``wire`` params; progress and
        log messages go to ``ctx`` (a 2026-07-28 backend is asked for the log
        level ``ctx`` wants); cancelling the caller cancels the backend call.
        A backend that does not answer within its ``requestTimeout``, or is lost
        meanwhile, fails the call with an error naming it."""
        spec, params = self._request(method, wire)
        session = self.session
        assert session is not None
        if session.stateless:
            params = with_log_level(params, ctx.ctx if isinstance(ctx, Rounds) else ctx)

        async def progress(value: float, total: float | None, message: str | None) -> None:
            if message is not None and self.redact is not None:
                message = self.redact.text(message)
            if ctx is not None:
                await _front_context(ctx).report_progress(value, total, message)

        request_id = session.next_id()
        if ctx is not None:
            self._in_flight.append(ctx)
            self._forwarded[request_id] = ctx
        try:
            answer = self._answer(session, spec, params, progress, request_id)
            if self.audit is not None and ctx is not None:
                front = ctx.ctx if isinstance(ctx, Rounds) else ctx
                return await self.audit.call(self.prefix, method, wire, front, answer)
            return await answer
        finally:
            if ctx is not None:
                self._in_flight.remove(ctx)
                del self._forwarded[request_id]

    async def _answer(
        self,
        session: ClientSession,
        spec: Any,
        params: object,
        progress: Callable[[float, float | None, str | None], Awaitable[None]],
        request_id: RequestId,
    ) -> object:
        try:
            result = await session.request(
                spec,
                params,
                on_progress=progress,
                timeout=self.config.request_timeout,
                request_id=request_id,
            )
            return self.redact.result(result) if self.redact is not None else result
        except McpError as error:
            if error.code not in (jsonrpc.REQUEST_TIMEOUT, jsonrpc.CONNECTION_CLOSED):
                if self.redact is not None:
                    raise self.redact.error(error) from None
                raise  # the backend's own answer
            raise McpError(
                error.code, f"the server behind {self.prefix!r}: {error.message}", error.data
            ) from None

    async def forward_task(
        self, wire: Mapping[str, object], ctx: RequestContext | Rounds | None
    ) -> object:
        """The result of a backend tool that runs only as a task: called with
        ``task``, then waited for with ``tasks/result`` (cancelled at the backend
        when the caller gives up). A backend without 2025-11-25 tasks gets the call."""
        spec, params = self._request("tools/call", {**wire, "task": {}})
        session = self.session
        assert session is not None
        revision = lifecycle.revision(session.protocol_version)
        if "tasks/result" not in revision.all_methods:
            return await self.forward("tools/call", wire, ctx)
        work = self._task(session, spec, params, revision, ctx)
        if self.audit is not None and ctx is not None:
            # One line for the front's call, however many requests the task took.
            front = ctx.ctx if isinstance(ctx, Rounds) else ctx
            return await self.audit.call(self.prefix, "tools/call", wire, front, work)
        return await work

    async def _task(
        self,
        session: ClientSession,
        spec: Any,
        params: object,
        revision: Any,
        ctx: RequestContext | Rounds | None,
    ) -> object:
        creating = dataclasses.replace(spec, result=revision.package.CreateTaskResult)
        created = await session.request(creating, params, timeout=self.config.request_timeout)
        task_id = created.task.task_id
        try:
            payload = await self.forward("tasks/result", {"taskId": task_id}, ctx)
        except asyncio.CancelledError:
            if self.session is session and not session.is_closed:
                with contextlib.suppress(McpError):
                    await asyncio.shield(self.forward("tasks/cancel", {"taskId": task_id}, None))
            raise
        return codec.convert(msgspec.to_builtins(payload), spec.result)

    async def in_rounds(
        self,
        start: Callable[[RequestContext | Rounds], Coroutine[object, object, object]],
        params: object,
        request: RequestContext,
        flavor: Flavor,
    ) -> tuple[object, bool]:
        """A front request forwarded by ``start``: (the backend's answer, True), or
        for a 2026-07-28 front (its tools/call, prompts/get and resources/read: the
        revision's INPUT_REQUIRED_METHODS) an input-required result carrying the
        backend's question and False (see :class:`.relay.WaitingCalls`)."""
        if flavor.stateless:
            return await self.waiting.run(start, params, request, flavor)
        return await start(request), True

    def front(self, asked: RequestContext | None = None) -> RequestContext | Rounds | None:
        """The front request a backend's question (``asked``: its request) belongs
        to: the one whose call it came within (a 2026-07-28 backend's
        input-required result) or on whose response stream (Streamable HTTP),
        as ``asked.extra.related`` names that call, else the newest in flight
        to this backend (see :mod:`.relay`)."""
        if asked is not None:
            carrying = asked.extra.related
            found = self._forwarded.get(carrying) if carrying is not None else None
            if found is not None:
                return found
        return self._in_flight[-1] if self._in_flight else None

    async def relay_log(self, params: Any, ctx: RequestContext) -> None:
        """A backend's log message (``ctx``: its notification's context), to the
        front request whose call it came on the response stream of (Streamable
        HTTP), else the newest in flight."""
        carrying = ctx.extra.related
        front = (self._forwarded.get(carrying) if carrying is not None else None) or self.front()
        if front is None:
            return
        name = params.logger if isinstance(params.logger, str) else self.prefix
        data = msgspec.to_builtins(params.data)
        if self.redact is not None:
            data = self.redact.value(data)
        await _front_context(front).log(params.level, data, name)

    async def relay_resource_updated(self, uri: str) -> None:
        """A backend's resource changed: the front's subscribers to its prefixed URI are told."""
        await self.parent.notify_resource_updated(prefixed_uri(self.prefix, uri))

    # ------------------------------------------------------------ lists

    def refresh_later(self, kinds: tuple[str, ...]) -> None:
        task = asyncio.get_running_loop().create_task(self.refresh(kinds))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def refresh(self, kinds: tuple[str, ...]) -> None:
        """Read the backend's ``kinds`` lists and serve them under the prefix."""
        session = self.session
        if session is None:
            return
        offered = msgspec.to_builtins(session.server_capabilities or {})
        revision = session.client.bindings.revision(session.protocol_version)
        for kind in kinds:
            items: list[dict[str, object]] = []
            listing = _list_request(revision, kind)
            if KINDS[kind] in offered and listing is not None:
                method, member = listing
                cursor: object = None
                while True:
                    result = msgspec.to_builtins(
                        await self.forward(method, {"cursor": cursor} if cursor else {}, None)
                    )
                    items += result.get(member, [])
                    cursor = result.get("nextCursor")
                    if not cursor:
                        break
            self._replace(kind, {self._key(kind, item): item for item in items})
        if "completions" in offered:
            self._sync_completions()

    def _key(self, kind: str, item: Mapping[str, object]) -> str:
        if kind == "templates":
            return str(item["uriTemplate"])
        return str(item["uri" if kind == "resources" else "name"])

    def _permits(self, tool: str) -> bool:
        if any(fnmatch.fnmatchcase(tool, pattern) for pattern in self.deny_tools):
            return False
        return self.allow_tools is None or any(
            fnmatch.fnmatchcase(tool, pattern) for pattern in self.allow_tools
        )

    def scopes_of(self, tool: str) -> frozenset[str]:
        """The OAuth scopes a front caller needs for the backend's ``tool``: those
        of every pattern of ``scopes`` the name matches."""
        return frozenset(
            scope
            for pattern, needed in self.scopes.items()
            if fnmatch.fnmatchcase(tool, pattern)
            for scope in needed
        )

    def _replace(self, kind: str, items: Mapping[str, dict[str, object]]) -> None:
        parent_items: dict[str, Any] = getattr(self.parent.registry, kind)
        ours = self._keys[kind]
        wanted: dict[str, Any] = {}
        held = self.parent.registry.held[kind]
        for outer in [outer for outer, (prefix, _) in held.items() if prefix == self.prefix]:
            del held[outer]
        for key, item in items.items():
            if kind == "tools" and not self._permits(key):
                continue
            outer = (
                prefixed_name(self.prefix, key)
                if kind in ("tools", "prompts")
                else prefixed_uri(self.prefix, key)
            )
            if outer in parent_items and outer not in ours:
                continue  # the parent's own item of that name wins
            why = self.pins.admit(self.prefix, kind, key, item) if self.pins else None
            if why is not None:
                held[outer] = (self.prefix, why)
                continue
            try:
                wanted[outer] = _wrap(kind, self, key, outer, item)
            except ValueError as error:  # a template our matcher cannot read
                logger.warning("proxy %r: %s is not served: %s", self.prefix, key, error)
        changed = ours != set(wanted) or any(
            parent_items[outer].wire != each.wire for outer, each in wanted.items() if outer in ours
        )
        for outer in ours - set(wanted):
            parent_items.pop(outer, None)
        parent_items.update(wanted)
        self._keys[kind] = set(wanted)
        if changed:
            self.parent._changed(kind)

    def _sync_completions(self) -> None:
        completions = self.parent.registry.completions
        for key in self._completions:
            completions.pop(key, None)
        self._completions = set()
        registry = self.parent.registry
        found: list[tuple[str, str, str, str]] = []
        for outer in self._keys["prompts"]:
            prompt = registry.prompts[outer]
            for argument in prompt.wire.get("arguments", []):
                found.append(("ref/prompt", outer, prompt.inner, argument["name"]))
        for outer in self._keys["templates"]:
            template = registry.templates[outer]
            assert template.template is not None
            for variable in template.template.variables:
                found.append(("ref/resource", outer, template.inner, variable))
        for kind, outer, inner, argument in found:
            key = (kind, outer, argument)
            if key not in completions:
                completions[key] = ProxiedCompleter(self, inner)
                self._completions.add(key)


def _front_context(front: RequestContext | Rounds) -> RequestContext:
    """The front request's context. The backend's progress and log messages are
    relayed from the task reading the backend, not the front request's: sent
    through this context, they are related to the front request all the same
    (Streamable HTTP sends them on its stream, not the session's standalone one)."""
    return front.ctx if isinstance(front, Rounds) else front


def _wire(params: Any, **replaced: object) -> dict[str, Any]:
    """A front request's params as the backend's wire dict, without the front hop's members."""
    wire: dict[str, Any] = msgspec.to_builtins(params)
    for member in _HOP_MEMBERS:
        wire.pop(member, None)
    wire.update(replaced)
    return wire


def _wrap(kind: str, proxy: Proxy, key: str, outer: str, item: dict[str, object]) -> object:
    if kind == "tools":
        return ProxiedTool(proxy, key, outer, item)
    if kind == "prompts":
        return ProxiedPrompt(proxy, key, outer, item)
    return ProxiedResource(proxy, key, outer, item, kind == "templates")


class ProxiedTool:
    """A backend's tool as the app lists and calls it."""

    __slots__ = ("proxy", "inner", "name", "spec", "tags", "task_support", "scopes", "wire")
    proxied = True

    def __init__(self, proxy: Proxy, inner: str, outer: str, item: dict[str, object]) -> None:
        self.proxy, self.inner, self.name, self.spec = proxy, inner, outer, self
        self.tags: frozenset[str] = frozenset()
        # The backend's taskSupport is the front's: a task-required tool runs as a
        # task of the app (2025-11-25) whose work is the backend's own task.
        execution = item.get("execution")
        support = execution.get("taskSupport") if isinstance(execution, Mapping) else None
        self.task_support: Literal["optional", "required"] | None = (
            support if support in ("optional", "required") else None
        )
        self.scopes: frozenset[str] = proxy.scopes_of(inner)
        # The backend's UI resources are served under the prefix rule: its link follows.
        self.wire: dict[str, object] = relinked(
            {**item, "name": outer}, lambda uri: prefixed_uri(proxy.prefix, uri)
        )

    def call(self, params: object, request: RequestContext, flavor: Flavor) -> Awaitable[object]:
        return self._call(params, request, flavor)

    async def _call(self, params: object, request: RequestContext, flavor: Flavor) -> object:
        if self.scopes:
            check_scopes(request, self.scopes)
        result, final = await self.proxy.in_rounds(self._start(params), params, request, flavor)
        return self._own(result, flavor) if final else result

    async def call_in_task(
        self, params: object, request: RequestContext, flavor: Flavor, task: object
    ) -> object:
        """The call as the work of a task of the 2026-07-28 tasks extension
        (``task``: its TaskContext): the backend's questions become the task's
        input requests, answered by the client's ``tasks/update``."""
        if self.scopes:
            check_scopes(request, self.scopes)
        result = await self._start(params)(InTask(request, flavor, task))
        return self._own(result, flavor)

    def _start(
        self, params: object
    ) -> Callable[[RequestContext | Rounds], Coroutine[object, object, object]]:
        wire = _wire(params, name=self.inner)
        proxy = self.proxy

        def start(front: RequestContext | Rounds) -> Coroutine[Any, Any, object]:
            if self.task_support == "required":
                return proxy.forward_task(wire, front)
            return proxy.forward("tools/call", wire, front)

        return start

    def _own(self, result: object, flavor: Flavor) -> object:
        return own_call_result(self.proxy.prefix, result, flavor)


class ProxiedPrompt:
    """A backend's prompt as the app lists and gets it."""

    __slots__ = ("proxy", "inner", "name", "spec", "tags", "scopes", "wire")

    def __init__(self, proxy: Proxy, inner: str, outer: str, item: dict[str, object]) -> None:
        self.proxy, self.inner, self.name, self.spec = proxy, inner, outer, self
        self.tags: frozenset[str] = frozenset()
        self.scopes: frozenset[str] = frozenset()
        self.wire: dict[str, object] = {**item, "name": outer}

    async def get(self, params: object, request: RequestContext, flavor: Flavor) -> object:
        wire = _wire(params, name=self.inner)
        proxy = self.proxy

        def start(front: RequestContext | Rounds) -> Coroutine[Any, Any, object]:
            return proxy.forward("prompts/get", wire, front)

        result, final = await proxy.in_rounds(start, params, request, flavor)
        if not final:
            return result
        result = linked_prompt(proxy.prefix, result)
        wire = msgspec.to_builtins(result)
        blocks = [to_block(message.content, flavor) for message in result.messages]
        wire["messages"] = [
            {**m, "content": {"type": "text", "text": ""}} for m in wire["messages"]
        ]
        own = flavor.convert(wire, "GetPromptResult")
        messages = [
            msgspec.structs.replace(message, content=block)
            for message, block in zip(own.messages, blocks)
        ]
        return msgspec.structs.replace(own, messages=messages)


class ProxiedResource:
    """A backend's resource or template as the app lists and reads it."""

    __slots__ = ("proxy", "inner", "uri", "spec", "tags", "scopes", "template", "wire")

    def __init__(
        self, proxy: Proxy, inner: str, outer: str, item: dict[str, object], template: bool
    ) -> None:
        self.proxy, self.inner, self.uri, self.spec = proxy, inner, outer, self
        self.tags: frozenset[str] = frozenset()
        self.scopes: frozenset[str] = frozenset()
        self.template = UriTemplate(outer) if template else None
        self.wire: dict[str, object] = {**item, ("uriTemplate" if template else "uri"): outer}

    async def read(
        self,
        uri: str,
        variables: Mapping[str, str],
        params: object,
        request: RequestContext,
        flavor: Flavor,
    ) -> object:
        proxy = self.proxy
        wire = _wire(params, uri=unprefixed_uri(proxy.prefix, uri) or uri)

        def start(front: RequestContext | Rounds) -> Coroutine[Any, Any, object]:
            return proxy.forward("resources/read", wire, front)

        result, final = await proxy.in_rounds(start, params, request, flavor)
        if not final:
            return result
        wire = msgspec.to_builtins(result)
        wire["contents"] = [
            {**each, "uri": prefixed_uri(self.proxy.prefix, each["uri"])}
            for each in wire.get("contents", [])
        ]
        if flavor.stateless:
            wire.update(
                ttlMs=flavor.cache_hints["ttl_ms"], cacheScope=flavor.cache_hints["cache_scope"]
            )
        return flavor.convert(wire, "ReadResourceResult")


class ProxiedCompleter(Completer):
    """A completion of a backend's prompt or template, answered by the backend."""

    __slots__ = ("proxy", "inner")

    def __init__(self, proxy: Proxy, inner: str) -> None:
        self.proxy = proxy
        self.inner = inner

    async def answer(self, params: object, request: RequestContext, flavor: Flavor) -> object:
        kind, _, _ = completion_key(params)
        wire = _wire(params)
        wire["ref"] = {**wire["ref"], ("name" if kind == "ref/prompt" else "uri"): self.inner}
        result = await self.proxy.forward("completion/complete", wire, request)
        return flavor.convert(msgspec.to_builtins(result), "CompleteResult")
