"""Finished spans as a tree with timings, for a terminal (``mcpx --trace``):
the spans of this process and those servers exported to it, joined by trace."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class SpanRecord:
    """What the tree shows of a span, wherever it was recorded."""

    name: str
    kind: str  # "client", "server", "internal"...
    trace_id: int
    span_id: int
    parent_id: int | None
    start_ns: int
    end_ns: int
    service: str
    error: str | None = None  # error.type, when the span failed

    @property
    def milliseconds(self) -> float:
        return (self.end_ns - self.start_ns) / 1e6


def render(spans: Iterable[SpanRecord]) -> list[str]:
    """One line per span, children under their parent in start order: name,
    kind, process (service) and duration; each trace headed by its id."""
    spans = sorted(spans, key=lambda s: s.start_ns)
    ids = {s.span_id for s in spans}
    children: dict[int | None, list[SpanRecord]] = {}
    for span in spans:
        parent = span.parent_id if span.parent_id in ids else None
        children.setdefault(parent, []).append(span)
    width = max((len(s.name) + 3 * _depth(s, spans) for s in spans), default=0) + 2
    lines: list[str] = []
    roots = children.get(None, [])
    for trace_id in dict.fromkeys(s.trace_id for s in roots):
        lines.append(f"trace {trace_id:032x}")
        tops = [s for s in roots if s.trace_id == trace_id]
        for index, span in enumerate(tops):
            _walk(span, children, "", index == len(tops) - 1, width, lines)
    return lines


def _depth(span: SpanRecord, spans: Sequence[SpanRecord]) -> int:
    by_id = {s.span_id: s for s in spans}
    depth, parent = 0, span.parent_id
    while parent in by_id:
        depth += 1
        parent = by_id[parent].parent_id
    return depth + 1


def _walk(
    span: SpanRecord,
    children: dict[int | None, list[SpanRecord]],
    prefix: str,
    last: bool,
    width: int,
    lines: list[str],
) -> None:
    branch = "└─ " if last else "├─ "
    label = f"{prefix}{branch}{span.name}"
    failed = f"  ! {span.error}" if span.error else ""
    lines.append(
        f"{label:<{width}} {span.kind:<8} {span.service:<16} {span.milliseconds:9.2f} ms{failed}"
    )
    below = children.get(span.span_id, [])
    for index, child in enumerate(below):
        _walk(
            child,
            children,
            prefix + ("   " if last else "│  "),
            index == len(below) - 1,
            width,
            lines,
        )
