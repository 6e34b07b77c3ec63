"""Completion of prompt arguments and resource template variables.

``@app.completion(prompt="summarize", argument="style")`` (or
``template="note://{id}"``) registers a function of the partial value (and,
if it takes a second parameter, the arguments already filled in) that returns
the candidates; at most 100 go back, with ``hasMore`` when there were more.
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from .._core.jsonrpc import INVALID_PARAMS, McpError
from ..methods import RequestContext
from ._flavor import Flavor

MAX_VALUES = 100


class Completer:
    """One completion function and how it is called."""

    __slots__ = ("fn", "is_async", "wants_arguments")

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.fn = fn
        self.is_async = inspect.iscoroutinefunction(fn)
        count = len(inspect.signature(fn).parameters)
        if count not in (1, 2):
            raise TypeError(
                f"completion {fn.__qualname__}: takes (value) or (value, arguments), not {count} parameters"
            )
        self.wants_arguments = count == 2
        if _returns_str(fn):
            raise TypeError(
                f"completion {fn.__qualname__}: returns one str, which would be split into "
                "characters; return a list of candidates"
            )

    async def answer(self, params: Any, request: RequestContext, flavor: Flavor) -> object:
        """The CompleteResult of a completion/complete request."""
        return await self.complete(params.argument.value, filled_arguments(params), flavor)

    async def complete(self, value: str, arguments: Mapping[str, str], flavor: Flavor) -> object:
        found = self.fn(value, dict(arguments)) if self.wants_arguments else self.fn(value)
        if self.is_async:
            found = await found
        if isinstance(found, str):
            raise TypeError(
                f"completion {self.fn.__qualname__} returned one str: return a list of candidates"
            )
        values = [str(item) for item in found]
        completion: dict[str, object] = {"values": values[:MAX_VALUES], "total": len(values)}
        if len(values) > MAX_VALUES:
            completion["hasMore"] = True
        return flavor.convert({"completion": completion}, "CompleteResult")


def completion_key(params: Any) -> tuple[str, str, str]:
    """(reference type, prompt name or template, argument name) of a completion/complete request."""
    ref = params.ref
    kind = getattr(ref, "type", None)
    if kind == "ref/prompt":
        return kind, ref.name, params.argument.name
    if kind == "ref/resource":
        return kind, ref.uri, params.argument.name
    raise McpError(INVALID_PARAMS, f"Invalid params: unknown reference type {kind!r}")


def filled_arguments(params: Any) -> Mapping[str, str]:
    """The arguments the client already filled in (``context.arguments``, 2025-06-18 on)."""
    context = getattr(params, "context", None)
    arguments = getattr(context, "arguments", None)
    return arguments if isinstance(arguments, Mapping) else {}


def _returns_str(fn: Callable[..., object]) -> bool:
    """Whether ``fn`` is annotated to return (or resolve to) one ``str``."""
    try:
        returned = typing.get_type_hints(fn).get("return")
    except Exception:  # unresolvable hints: judged by the value returned instead
        return False
    origin = typing.get_origin(returned)
    if isinstance(origin, type) and issubclass(origin, Awaitable):
        returned = typing.get_args(returned)[-1]
    return returned is str
