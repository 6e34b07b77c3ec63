"""What an app serves: its tools, resources, templates, prompts and completions.

The registry keeps each revision's ``tools/list`` (and the other lists) built
once, until the next change, and the handshake sessions subscribed to each
resource.
"""

from __future__ import annotations

import weakref
from collections.abc import Awaitable, Callable, Mapping

from .._core.session import Session
from ._completion import Completer
from ._flavor import Flavor
from ._prompts import PromptSpec
from ._resources import ResourceSpec
from ._tools import ToolSpec

ITEMS = {
    "tools": "Tool",
    "resources": "Resource",
    "templates": "ResourceTemplate",
    "prompts": "Prompt",
}
"""Each kind of item the registry holds, and the wire type of its items."""


class Registry:
    def __init__(self) -> None:
        self.tools: dict[str, ToolSpec] = {}
        self.resources: dict[str, ResourceSpec] = {}
        self.templates: dict[str, ResourceSpec] = {}
        self.prompts: dict[str, PromptSpec] = {}
        self.completions: dict[tuple[str, str, str], Completer] = {}
        # Tools withdrawn for a reason a caller should hear (a proxied server lost), by name.
        self.withdrawn: dict[str, str] = {}
        # Each proxied server's prefix -> why it is not connected (None while it is):
        # a tool of one never connected is named by no list, only by its prefix.
        self.backends: dict[str, Callable[[], str | None]] = {}
        # Definitions a proxied server lists but the app holds back (see .pinning):
        # kind -> name or URI template -> (the proxy's prefix, why).
        self.held: dict[str, dict[str, tuple[str, str]]] = {kind: {} for kind in ITEMS}
        self._listings: dict[tuple[str, str], list[object]] = {}
        self._subscribers: dict[str, weakref.WeakSet[Session]] = {}
        self._listening: dict[str, int] = {}  # URIs asked for by listen streams, how often
        # Told of each subscribe (True) and unsubscribe (False): proxies pass them on.
        self.subscription_watchers: list[Callable[[str, bool], Awaitable[None]]] = []
        # Told of each notifications/roots/list_changed of a front client: proxies pass it on.
        self.roots_watchers: list[Callable[[], Awaitable[None]]] = []

    def scopes_of(self, method: str, name: str) -> frozenset[str]:
        """The scopes a request of ``method`` naming ``name`` needs: those of the
        tool or prompt it names, or of the resource a ``resources/read`` of URI
        ``name`` reads (the exact one, else the template it matches); none for
        the rest."""
        item: ToolSpec | PromptSpec | ResourceSpec | None = None
        if method == "tools/call":
            item = self.tools.get(name)
        elif method == "prompts/get":
            item = self.prompts.get(name)
        elif method == "resources/read":
            found = self.resource(name)
            item = found[0] if found is not None else None
        return item.scopes if item is not None else frozenset()

    def resource(self, uri: str) -> tuple[ResourceSpec, dict[str, str]] | None:
        """What reads ``uri``: the resource of that exact URI, else the first
        template it matches, with the template's variables; None if neither."""
        static = self.resources.get(uri)
        if static is not None:
            return static, {}
        for template in self.templates.values():
            assert template.template is not None
            variables = template.template.match(uri)
            if variables is not None:
                return template, variables
        return None

    def specs(self, kind: str) -> Mapping[str, ToolSpec | ResourceSpec | PromptSpec]:
        """The specs of list ``kind`` (``tools``, ``resources``, ``templates``, ``prompts``)."""
        kinds: dict[str, Mapping[str, ToolSpec | ResourceSpec | PromptSpec]] = {
            "tools": self.tools,
            "resources": self.resources,
            "templates": self.templates,
            "prompts": self.prompts,
        }
        return kinds[kind]

    def listing(self, kind: str, flavor: Flavor) -> list[object]:
        """The items of list ``kind`` as ``flavor``'s types, built once per change."""
        key = (kind, flavor.version)
        found = self._listings.get(key)
        if found is None:
            found = self._listings[key] = [
                flavor.convert(spec.wire, ITEMS[kind]) for spec in self.specs(kind).values()
            ]
        return found

    def unknown(self, kind: str, name: str, otherwise: str) -> str:
        """The error message for ``name``, not served: why it is held back, else
        ``otherwise`` with why it was withdrawn (a proxied server lost), if it was."""
        held = self.held[kind].get(name)
        if held is not None:
            return held[1]
        why = self.withdrawn.get(name) if kind == "tools" else None
        if why is None and kind == "tools":
            for prefix, problem in self.backends.items():
                if name.startswith(f"{prefix}_") and (found := problem()) is not None:
                    why = f"the server behind {prefix!r} is not connected: {found}"
                    break
        return otherwise + (f" ({why})" if why else "")

    def changed(self, kind: str) -> None:
        for key in [key for key in self._listings if key[0] == kind]:
            del self._listings[key]

    # ------------------------------------------------------------ subscriptions (handshake revisions)

    def subscribe(self, uri: str, session: Session) -> None:
        self._subscribers.setdefault(uri, weakref.WeakSet()).add(session)

    def unsubscribe(self, uri: str, session: Session) -> None:
        sessions = self._subscribers.get(uri)
        if sessions is not None:
            sessions.discard(session)

    def subscribers(self, uri: str) -> list[Session]:
        return list(self._subscribers.get(uri, ()))

    def listened(self, uri: str, listening: bool) -> None:
        """A 2026-07-28 subscriptions/listen stream asks for ``uri`` (or no more)."""
        count = self._listening.get(uri, 0) + (1 if listening else -1)
        if count > 0:
            self._listening[uri] = count
        else:
            self._listening.pop(uri, None)

    def subscribed(self, uri: str) -> bool:
        """Whether a handshake session or a listen stream is subscribed to ``uri``."""
        return uri in self._listening or bool(self._subscribers.get(uri))
