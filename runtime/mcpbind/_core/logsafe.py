"""Peer-supplied text in log lines: quoted and truncated.

A peer chooses method names, error messages and ids; written raw, a newline
in one forges a log line of its own, and a megabyte of it fills the log. Every
place the runtime logs such text passes it through :func:`quoted`.
"""

from __future__ import annotations

from typing import Any, Final

LIMIT: Final = 200
"""Characters of peer text a log line keeps."""


def quoted(value: Any, limit: int = LIMIT) -> str:
    """``value`` as a Python literal (control characters escaped, strings in
    quotes), cut to ``limit`` characters with the number left out."""
    text = value if isinstance(value, str) else str(value)
    cut = text[:limit]
    shown = repr(cut)
    if len(text) > limit:
        return f"{shown}... ({len(text) - limit} more characters)"
    return shown
