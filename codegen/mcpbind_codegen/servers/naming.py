"""The naming rule of server bindings: every server name made a valid,
collision-free Python name, the same way every time.

1. A name is split into words at every character that is not a letter or a
   digit, at every lower-to-upper case change and around runs of digits
   (``get-forecast``, ``getForecast`` and ``get_forecast`` are the words
   ``get forecast``; ``HTTPServer2`` is ``http server 2``).
2. Methods, parameters and fields join the words in lower case with ``_``
   (``get_forecast``); classes join them capitalised (``GetForecast``).
   A name that would start with a digit gets ``n_`` (``N`` for a class) in
   front; a Python keyword, or a name the facade reserves, gets ``_`` behind.
3. Names are claimed in the order of the server's names sorted by their exact
   spelling (tools, then prompts, then resource templates); a name already
   claimed in the same scope gets ``_2``, ``_3`` ... (``2``, ``3`` ... for a
   class), so adding a tool never renames an existing one unless it sorts
   before a name it collides with.
4. Prompts' methods are ``prompt_`` + the prompt's name, resource templates'
   ``read_`` + the template's name; the facade's own names are ``session``
   and ``for_host``, and each method's options ``timeout`` and ``on_progress``.
"""

from __future__ import annotations

import keyword
import re

_WORD = re.compile(r"[A-Z]+(?=[A-Z][a-z0-9]|[^A-Za-z0-9]|$)|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")

FACADE_RESERVED = frozenset({"session", "for_host", "PROTOCOL_VERSION"})
PARAMETER_RESERVED = frozenset({"self", "timeout", "on_progress"})
# A field named like a type its class uses would hide that type in the class body.
FIELD_RESERVED = PARAMETER_RESERVED | frozenset(
    {
        "str", "int", "float", "bool", "list", "dict", "tuple", "msgspec", "datetime", "uuid",
        "Any", "Annotated", "Literal", "UNSET", "UnsetType", "protocol",
    }
)  # fmt: skip
# Names the generated module imports or defines itself.
MODULE_RESERVED = frozenset(
    {
        "Any", "Annotated", "Literal", "UNSET", "UnsetType", "msgspec", "datetime", "uuid",
        "protocol", "ServerBindings", "ProgressCallback", "SERVER_NAME", "SERVER_VERSION",
        "PROTOCOL_VERSION", "SNAPSHOT_SHA256", "annotations",
    }
)  # fmt: skip


def words(name: str) -> list[str]:
    return _WORD.findall(name)


def snake(name: str) -> str:
    parts = [w.lower() for w in words(name)]
    result = "_".join(parts) or "unnamed"
    if result[0].isdigit():
        result = f"n_{result}"
    if keyword.iskeyword(result) or keyword.issoftkeyword(result):
        result += "_"
    return result


def pascal(name: str) -> str:
    result = "".join(w[:1].upper() + w[1:].lower() if not w.isupper() else w for w in words(name))
    result = result or "Unnamed"
    if result[0].isdigit():
        result = f"N{result}"
    return result


class Scope:
    """The names claimed in one namespace (a module, a class, a signature)."""

    def __init__(self, reserved: frozenset[str] = frozenset(), *, classes: bool = False) -> None:
        self.reserved = reserved
        self.taken: set[str] = set()
        self.classes = classes

    def claim(self, candidate: str) -> str:
        if candidate in self.reserved:
            candidate += "_" if not self.classes else "Type"
        name, n = candidate, 1
        while name in self.taken or name in self.reserved:
            n += 1
            name = f"{candidate}{n}" if self.classes else f"{candidate}_{n}"
        self.taken.add(name)
        return name
