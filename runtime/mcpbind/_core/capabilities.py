"""What a message asks of declared capabilities beyond its method's own.

A method's :class:`~mcpbind.methods.MethodSpec` names the capability its
receiver must have declared for the method at all (``("elicitation",)``,
``("tools",)``). Some messages ask for more, by what their params say: a
URL-mode elicitation needs ``elicitation.url``, a sampling request that
offers tools ``sampling.tools``, a task-augmented request
``tasks.requests.<method>`` of its receiver; and a list-changed notification
needs its sender's own ``listChanged``. :func:`needs` says which, and
:func:`declares` whether a capabilities object grants one.

Each revision's generated capabilities types decide how deep a need goes: a
path is cut where the revision's type stops spelling members (2025-06-18
knows no elicitation modes, so any elicitation needs ``elicitation`` only;
a revision without ``tasks`` has no task-augmented requests to check).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any, Final

import msgspec
from msgspec import UNSET
from msgspec import inspect as mi

from . import lifecycle
from .lifecycle import Revision

CLIENT: Final = "ClientCapabilities"
SERVER: Final = "ServerCapabilities"

# Whose capabilities each side's messages are judged by: the receiver's, or
# the sender's own (a notification announcing what the sender said it would do).
_PEER = {CLIENT: SERVER, SERVER: CLIENT}

# Elicitation modes: an elicitation object declaring none of them is the form
# mode alone (2025-11-25: "an empty capabilities object is equivalent to
# declaring support for form mode only").
_MODES: Final = ("form", "url")


@dataclass(frozen=True, slots=True)
class Need:
    """One capability a message needs: ``path`` in the capabilities of the
    receiver (or of the sender itself, ``own``), as deep as the revision spells it."""

    path: tuple[str, ...]
    own: bool = False
    default_mode: bool = False  # granted by an object that declares no mode at all

    @property
    def dotted(self) -> str:
        return ".".join(self.path)


NONE: Final[tuple[Need, ...]] = ()


def needs(revision: Revision, sender: str, method: str, params: Any) -> tuple[Need, ...]:
    """What sending ``method`` with ``params`` needs beyond the method's own
    capability; ``sender`` is CLIENT or SERVER (whose types name the own needs)."""
    found: list[Need] = []
    receiver = _PEER[sender]
    if method == "elicitation/create":
        mode = _member(params, "mode")
        wanted = "url" if mode == "url" else "form"
        found.append(Need(("elicitation", wanted), default_mode=wanted == "form"))
    elif method == "sampling/createMessage" and _present(_member(params, "tools")):
        found.append(Need(("sampling", "tools")))
    if _present(_member(params, "task")):
        found.append(Need(("tasks", "requests", *method.split("/"))))
    # Notifications that only a sender who declared the path may send (generated protocol facts).
    spec = revision.all_methods.get(method)
    if spec is not None and spec.sender_capability:
        found.append(Need(spec.sender_capability, own=True))
    if not found:
        return NONE
    kept = []
    for need in found:
        path = spelled(revision, sender if need.own else receiver, need.path)
        if path:
            kept.append(Need(path, need.own, need.default_mode and path == need.path))
    return tuple(kept)


_PARAM_RULES: Final = frozenset({"elicitation/create", "sampling/createMessage"})


def beyond_method(revision: Revision, method: str, params: Any) -> bool:
    """Whether sending ``method`` with ``params`` may need more than the method's
    own capability: False when :func:`needs` would find nothing, which a sender
    on its hot path then need not ask."""
    if method in _PARAM_RULES or _present(_member(params, "task")):
        return True
    spec = revision.all_methods.get(method)
    return spec is not None and bool(spec.sender_capability)


def declares(capabilities: Any, need: Need) -> bool:
    """Whether a capabilities object (decoded, or a dict of wire names) grants ``need``."""
    if lifecycle.has_capability(capabilities, need.path):
        return True
    if not need.default_mode:
        return False
    parent = need.path[:-1]
    if not lifecycle.has_capability(capabilities, parent):
        return False
    node: Any = capabilities
    for key in parent:
        node = _member(node, key)
    return not any(_present(_member(node, mode)) for mode in _MODES)


def unmet(
    revision: Revision,
    sender: str,
    method: str,
    params: Any,
    receiver_declared: Any,
    own_declared: Any = None,
) -> list[Need]:
    """The needs of sending ``method`` with ``params`` that the declared capabilities do not grant."""
    if not beyond_method(revision, method, params):
        return []  # on every request's path: most need nothing beyond their method's capability
    return [
        need
        for need in needs(revision, sender, method, params)
        if not declares(own_declared if need.own else receiver_declared, need)
    ]


def refusal(unmet: list[Need], method: str, receiver: str) -> str:
    """The reason a message is not sent: which capability is missing, whose."""
    names = ", ".join(need.dotted for need in unmet)
    if all(need.own for need in unmet):
        return f"cannot send {method}: this side did not declare the {names} capability"
    return f"the {receiver} did not declare the {names} capability needed for this {method}"


@cache
def spelled(revision: Revision, type_name: str, path: tuple[str, ...]) -> tuple[str, ...]:
    """The part of ``path`` the revision's capabilities type spells member by member."""
    node: Any = mi.type_info(revision.type(type_name))
    for depth, key in enumerate(path):
        struct = _struct(node)
        if struct is None:
            return path[:depth]
        field = next((f for f in struct.fields if f.encode_name == key), None)
        if field is None:
            return path[:depth]
        node = field.type
    return path


def _struct(node: Any) -> mi.StructType | None:
    if isinstance(node, mi.StructType):
        return node
    if isinstance(node, mi.UnionType):
        for arm in node.types:
            if isinstance(arm, mi.StructType):
                return arm
    return None


def _member(value: Any, key: str) -> Any:
    if value is None or value is UNSET:
        return UNSET
    if isinstance(value, msgspec.Struct):  # first: a C type check, where Mapping's is an ABC's
        name = _attribute(type(value), key)
        return UNSET if name is None else getattr(value, name)
    if isinstance(value, Mapping):
        return value.get(key, UNSET)
    return UNSET


@cache  # asked of every request a session sends: its params type, "task"
def _attribute(struct: type[msgspec.Struct], key: str) -> str | None:
    """The attribute of a Struct type whose wire name is ``key``, if it has one."""
    for name, wire in zip(struct.__struct_fields__, struct.__struct_encode_fields__):
        if wire == key:
            return name
    return None


def _present(value: Any) -> bool:
    return value is not UNSET and value is not None
