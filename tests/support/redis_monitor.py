"""What a real redis-server runs, as ``MONITOR`` shows it, cut into windows.

:class:`Monitor` holds a ``MONITOR`` connection to a :class:`~support.redis_server.RedisServer`
and reads it in a thread. :meth:`Monitor.window` returns the commands Redis ran between two
marks (an ``ECHO`` sent on a connection of the monitor's own, seen in order with the others).

How the costs are counted (the scaling guide's table uses the same words):

* **commands**: every command Redis ran, those a Lua script ran included (``MONITOR`` lists
  them after the script, from ``[0 lua]``);
* **round trips**: the commands a client sent (a script is one, whatever it runs). The store
  sends no pipelines or ``MULTI`` blocks on these paths, so each command sent is one wait for
  Redis's answer.

Background work that does not belong to any request (each worker's heartbeat ``SET`` every 2 s,
its pub/sub connection's ``SUBSCRIBE``) is left out by :meth:`Monitor.window`'s ``ignore``.
"""

from __future__ import annotations

import itertools
import re
import socket
import threading
import time
from dataclasses import dataclass

from support.redis_server import RedisServer

_LINE = re.compile(r"^\+?[0-9.]+ \[\d+ (?P<source>[^\]]+)\] (?P<args>.*)$")
_ARG = re.compile(r'"((?:[^"\\]|\\.)*)"')
_marks = itertools.count()


@dataclass(frozen=True)
class Command:
    """One command Redis ran: who sent it (``lua`` for a script's), its words."""

    source: str
    args: tuple[str, ...]

    @property
    def name(self) -> str:
        return self.args[0].upper() if self.args else ""

    @property
    def by_script(self) -> bool:
        return self.source == "lua"


@dataclass(frozen=True)
class Cost:
    commands: int
    round_trips: int
    names: tuple[str, ...]  # what was sent, in order (a script's commands after it)


class Monitor:
    """A ``MONITOR`` connection to ``redis``, read in a thread."""

    def __init__(self, redis: RedisServer) -> None:
        self.redis = redis
        self.lines: list[str] = []
        self._seen = threading.Condition()
        self._conn = socket.create_connection(("127.0.0.1", redis.port), timeout=None)
        self._conn.sendall(b"*1\r\n$7\r\nMONITOR\r\n")
        self._marker = socket.create_connection(("127.0.0.1", redis.port), timeout=10)
        self._thread = threading.Thread(target=self._read, name="redis-monitor", daemon=True)
        self._thread.start()
        self._wait_for(lambda: any(line == "+OK" for line in self.lines), "MONITOR's +OK")

    def _read(self) -> None:
        pending = b""
        while True:
            try:
                chunk = self._conn.recv(65536)
            except OSError:
                return
            if not chunk:
                return
            pending += chunk
            *complete, pending = pending.split(b"\r\n")
            with self._seen:
                self.lines.extend(line.decode("utf-8", "replace") for line in complete)
                self._seen.notify_all()

    def _wait_for(self, condition: object, what: str, timeout: float = 30.0) -> None:
        assert callable(condition)
        deadline = time.monotonic() + timeout
        with self._seen:
            while not condition():
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"MONITOR did not show {what} within {timeout} s")
                self._seen.wait(left)

    def mark(self) -> int:
        """Send a mark and wait until MONITOR shows it; its place in :attr:`lines`."""
        word = f"mark-{next(_marks)}"
        self._marker.sendall(f"*2\r\n$4\r\nECHO\r\n${len(word)}\r\n{word}\r\n".encode())
        reply = b""
        while not reply.endswith(b"\r\n") or reply.count(b"\r\n") < 2:
            reply += self._marker.recv(4096)
        needle = f'"ECHO" "{word}"'
        self._wait_for(lambda: any(line.endswith(needle) for line in self.lines), needle)
        with self._seen:
            return next(i for i, line in enumerate(self.lines) if line.endswith(needle))

    def commands(self, start: int, end: int, ignore: tuple[str, ...] = ()) -> list[Command]:
        """The commands shown between two marks, less those whose words contain one of
        ``ignore`` (and the monitor's own marks)."""
        found = []
        with self._seen:
            lines = self.lines[start + 1 : end]
        for line in lines:
            parsed = _LINE.match(line)
            if parsed is None:
                continue
            args = tuple(_ARG.findall(parsed["args"]))
            if args and args[0].upper() == "ECHO" and args[-1].startswith("mark-"):
                continue
            if any(word in arg for word in ignore for arg in args):
                continue
            found.append(Command(parsed["source"], args))
        return found

    def cost(self, start: int, end: int, ignore: tuple[str, ...] = ()) -> Cost:
        found = self.commands(start, end, ignore)
        # A script's commands follow it: they belong to the request whose script ran them.
        return Cost(
            commands=len(found),
            round_trips=sum(1 for command in found if not command.by_script),
            names=tuple(command.name for command in found),
        )

    def close(self) -> None:
        for conn in (self._conn, self._marker):
            try:
                conn.close()
            except OSError:
                pass
