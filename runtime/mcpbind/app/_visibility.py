"""Visibility: which tools, resources and prompts each session sees.

    app.disable(tags={"admin"})                    # hidden from everyone
    app.enable(tags={"admin"}, session=ctx)        # but shown to this session

A rule names items (by tool or prompt name, resource URI or template) or
tags; for one item a rule on its name wins over a rule on its tags, a
session's rules over the app's, and a later rule over an earlier one of the
same kind. An item no rule names is visible. A hidden item is absent from
its list and unknown to calls (``tools/call`` of a hidden tool is -32602
"Unknown tool", as for one that does not exist).

After each change, the sessions whose view changed, and only those, get the
list-changed notification of that list; 2026-07-28 ``subscriptions/listen``
streams, which have no session, get it when the app's view changed. Rules
live in this process; with a shared store, the app's rules made while
serving are shared by every worker (see :mod:`.shared_rules`).
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Protocol

# The lists of the app, and the list-changed notification ("tools" ...) of each.
KINDS = {"tools": "tools", "resources": "resources", "templates": "resources", "prompts": "prompts"}


class Rules:
    """Enable/disable rules by name and by tag (later rules override earlier ones)."""

    __slots__ = ("names", "tags")

    def __init__(self) -> None:
        self.names: dict[str, bool] = {}
        self.tags: dict[str, bool] = {}

    def __bool__(self) -> bool:
        return bool(self.names or self.tags)

    def set(self, names: Iterable[str], tags: Iterable[str], shown: bool) -> None:
        for name in names:
            self.names[name] = shown
        for tag in tags:
            self.tags[tag] = shown

    def verdict(self, name: str, tags: frozenset[str]) -> bool | None:
        """Shown (True), hidden (False), or no rule for it (None)."""
        found = self.names.get(name)
        if found is not None:
            return found
        verdicts = [self.tags[tag] for tag in tags if tag in self.tags]
        if not verdicts:
            return None
        return all(verdicts)  # a hidden tag hides, unless every tag of the item is shown


class Delegate(Protocol):
    """Rules kept elsewhere on some of the items (a mounted app's, on its own names)."""

    @property
    def active(self) -> bool: ...

    def verdict(self, session: object | None, name: str, tags: frozenset[str]) -> bool | None: ...


class Visibility:
    """The app's rules and each session's."""

    def __init__(self) -> None:
        self.app = Rules()
        self._sessions: weakref.WeakKeyDictionary[object, Rules] = weakref.WeakKeyDictionary()
        self._own = False  # whether any rule of ours exists
        # The rules of mounted apps on their own items (see .mount), after ours.
        self.delegates: list[Delegate] = []
        # Called after every change: what the app's middleware keeps of lists (Cache) is stale.
        self.on_change: list[Callable[[], None]] = []

    @property
    def active(self) -> bool:
        """Whether any rule exists (here or in a mounted app): without one, nothing is filtered."""
        return self._own or any(each.active for each in self.delegates)

    def rules(self, session: object | None) -> Rules:
        if session is None:
            return self.app
        found = self._sessions.get(session)
        if found is None:
            found = self._sessions[session] = Rules()
        return found

    def change(
        self, session: object | None, names: Iterable[str], tags: Iterable[str], shown: bool
    ) -> None:
        self.rules(session).set(names, tags, shown)
        self._own = bool(self.app) or any(self._sessions.values())
        for each in self.on_change:
            each()

    def visible(self, session: object | None, name: str, tags: frozenset[str]) -> bool:
        if not self.active:
            return True
        verdict = self.verdict(session, name, tags)
        return True if verdict is None else verdict

    def verdict(self, session: object | None, name: str, tags: frozenset[str]) -> bool | None:
        """Shown, hidden, or no rule for it (None): the session's rules, the
        app's, then those of the mounted app the item comes from."""
        if session is not None:
            own = self._sessions.get(session)
            if own is not None:
                verdict = own.verdict(name, tags)
                if verdict is not None:
                    return verdict
        verdict = self.app.verdict(name, tags)
        if verdict is not None:
            return verdict
        for delegate in self.delegates:
            verdict = delegate.verdict(session, name, tags)
            if verdict is not None:
                return verdict
        return None

    def view(self, session: object | None, specs: Mapping[str, Any]) -> frozenset[str]:
        """The keys of ``specs`` (name → spec with ``tags``) that ``session`` sees."""
        return frozenset(
            key for key, spec in specs.items() if self.visible(session, key, spec.tags)
        )
