"""Server-sent events (``text/event-stream``) as the HTTP client transports
read them: an incremental parser that follows the WHATWG HTML specification."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

MAX_EVENT_SIZE: Final = 64 * 1024 * 1024
"""Longest SSE line or event accepted, in bytes."""

_BOM = b"\xef\xbb\xbf"


@dataclass(frozen=True)
class SSEEvent:
    """One dispatched server-sent event."""

    event: str
    """The event type; ``message`` when the server named none."""
    data: str
    id: str | None
    """The stream's last event id once this event arrived."""


class SSEParseError(Exception):
    pass


class SSEParser:
    """An incremental ``text/event-stream`` parser (WHATWG HTML, server-sent
    events): lines end in CR, LF or CRLF; ``:`` starts a comment; ``data``
    lines accumulate; ``id``, ``event`` and ``retry`` fields; a blank line
    dispatches. Feed it bytes as they arrive."""

    def __init__(self, max_size: int = MAX_EVENT_SIZE, last_event_id: str | None = None) -> None:
        self._buffer = b""
        self._skip_lf = False
        self._started = False
        self._data: list[str] = []
        self._size = 0
        self._event = ""
        self._id_buffer = last_event_id
        self._max = max_size
        self.last_event_id = last_event_id
        """The id of the last dispatched event (ids persist across events)."""
        self.retry: int | None = None
        """The reconnection time the server asked for, in milliseconds."""

    def feed(self, chunk: bytes) -> list[SSEEvent]:
        if not self._started:  # a byte order mark may open the stream, even split
            chunk = self._buffer + chunk
            self._buffer = b""
            if len(chunk) < 3 and _BOM.startswith(chunk):
                self._buffer = chunk
                return []
            self._started = True
            if chunk.startswith(_BOM):
                chunk = chunk[3:]
        if self._skip_lf and chunk:
            self._skip_lf = False
            if chunk[:1] == b"\n":
                chunk = chunk[1:]
        buffer = self._buffer + chunk if self._buffer else chunk
        events: list[SSEEvent] = []
        start, size = 0, len(buffer)
        while start < size:
            lf = buffer.find(b"\n", start)
            cr = buffer.find(b"\r", start, lf if lf >= 0 else size)
            if cr >= 0:
                end = cr
                if cr + 1 < size:
                    after = cr + 2 if buffer[cr + 1] == 0x0A else cr + 1
                else:
                    after = cr + 1
                    self._skip_lf = True  # a CRLF may be split across chunks
            elif lf >= 0:
                end, after = lf, lf + 1
            else:
                break
            event = self._line(buffer[start:end])
            if event is not None:
                events.append(event)
            start = after
        self._buffer = buffer[start:]
        if len(self._buffer) > self._max:
            raise SSEParseError(f"SSE line longer than {self._max} bytes")
        return events

    def _line(self, raw: bytes) -> SSEEvent | None:
        if not raw:
            return self._dispatch()
        line = raw.decode("utf-8", "replace")
        if line.startswith(":"):
            return None  # a comment (keep-alive)
        field, colon, value = line.partition(":")
        if colon and value.startswith(" "):
            value = value[1:]
        if field == "data":
            self._data.append(value)
            self._size += len(value)
            if self._size > self._max:
                raise SSEParseError(f"SSE event larger than {self._max} bytes")
        elif field == "event":
            self._event = value
        elif field == "id":
            if "\0" not in value:
                self._id_buffer = value
        elif field == "retry":
            if value.isascii() and value.isdigit():
                self.retry = int(value)
        return None

    def _dispatch(self) -> SSEEvent | None:
        self.last_event_id = self._id_buffer
        data, event = self._data, self._event
        self._data, self._event, self._size = [], "", 0
        if not data:
            return None
        return SSEEvent(event or "message", "\n".join(data), self.last_event_id)


__all__ = ["MAX_EVENT_SIZE", "SSEEvent", "SSEParseError", "SSEParser"]
