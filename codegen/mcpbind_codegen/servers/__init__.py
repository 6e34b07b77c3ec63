"""Typed bindings for any MCP server: ``mcp-codegen server``.

A server's published contract (its tools' input and output schemas, its
prompts' arguments, its resource templates) is saved as a :mod:`.snapshot`,
read into a small type model (:mod:`.schema`, :mod:`.types`) named by one rule
(:mod:`.naming`), turned into the model of a module (:mod:`.model`) and
rendered (:mod:`.render`) through the generator's template and black steps.
:mod:`.drift` compares two snapshots for ``--check``.
"""

from __future__ import annotations

from .model import BindingModule, build
from .render import render
from .snapshot import Snapshot, Source

__all__ = ["BindingModule", "Snapshot", "Source", "build", "generate", "render"]


def generate(snapshot: Snapshot, facade: str | None = None) -> str:
    """The bindings module of ``snapshot``, as formatted source."""
    return render(build(snapshot, facade))
