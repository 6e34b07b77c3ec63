"""The ASGI interface as the runtime speaks it, named once for every module that does.

An application is called with a connection's ``scope`` and two callables: ``receive`` for
what the client sends (the request body, ``http.disconnect``) and ``send`` for the answer.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]

__all__ = ["App", "Message", "Receive", "Scope", "Send"]
