"""The stdio transport: newline-delimited JSON-RPC over a process's pipes.

A server reads stdin and writes only protocol messages to stdout; everything
else (logging, stray prints) goes to stderr. A client spawns the server as a
child process and, when done, closes its stdin, then terminates, then kills it.
On POSIX the server gets a process group of its own and the signals go to the
whole group, so that a server started through a launcher (npx, uvx, a shell
script) ends with it.
"""

from __future__ import annotations

import asyncio
import io
import logging
import os
import signal
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, runtime_checkable

from .._core import jsonrpc, wire
from .._core.jsonrpc import RequestId
from .._core.logsafe import quoted
from .._core.wire import Message

logger = logging.getLogger(__name__)

MAX_MESSAGE_SIZE = 64 * 1024 * 1024
"""Longest line accepted, in bytes; longer ones are dropped whole, and refused
(a request is answered with -32600; a response fails the call waiting for it)."""

MAX_BUFFERED = 64 * 1024 * 1024
"""Most bytes that may wait for the peer to read them when another message is
written; past it the connection is dropped (see StreamTransport)."""

_HEAD = 64 * 1024  # how much of a dropped message is kept to find its id


@runtime_checkable
class HasWriteLimits(Protocol):
    """An asyncio write transport's buffer limits (asyncio's and uvloop's
    alike; uvloop's transports are no ``asyncio.WriteTransport`` instances)."""

    def get_write_buffer_limits(self) -> tuple[int, int]:
        """(low, high) water marks, in bytes."""


class StreamTransport:
    """A :class:`~mcpbind._core.session.Transport` over an asyncio reader and writer.

    ``max_buffered`` bounds what is written but not yet taken by the peer.
    Requests are read and answered while earlier answers wait in the buffer,
    so a peer that keeps sending but never reads would make it grow without
    end: a message written while more than ``max_buffered`` bytes wait drops
    the connection, with a logged error. (One message, however large, never
    does by itself; ``max_message_size`` limits what is read.)
    """

    def __init__(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter | _FileWriter,
        *,
        max_message_size: int = MAX_MESSAGE_SIZE,
        max_buffered: int = MAX_BUFFERED,
    ) -> None:
        self._reader = reader
        self._writer = writer
        self._max = max_message_size
        self._max_buffered = max_buffered
        pipe = writer.transport
        # A regular file (_FileWriter) buffers nothing: no low-water mark.
        self._low_water = (
            pipe.get_write_buffer_limits()[0] if isinstance(pipe, HasWriteLimits) else 0
        )
        self._closed = False

    async def read(self) -> Message | None:
        while not self._closed:
            try:
                line = await self._reader.readuntil(b"\n")
            except asyncio.IncompleteReadError as error:
                line = error.partial  # the last message may lack its newline
                if not line or line.isspace():
                    break
            except asyncio.LimitOverrunError:
                try:
                    refused = self._refuse(await self._discard_line())
                except (ConnectionError, OSError):
                    break
                if refused is not None:
                    return wire.incoming(refused)
                continue
            except (ConnectionError, OSError):
                break
            # Not line.strip(): that copies the whole message to find one byte.
            if not line.isspace():
                return Message(data=line)
        await self._reading_ended(self._closed)
        return None

    async def _reading_ended(self, closed_here: bool) -> None:
        """Called once reading has ended, before read() says so (returns None);
        ``closed_here``: by close() rather than by the peer. A hook, rather than
        an override of read(), which would add a call to every message read."""
        return None

    async def _discard_line(self) -> bytes:
        """Skip the rest of a line longer than max_message_size; its first bytes."""
        head = b""
        while True:
            try:
                rest = await self._reader.readuntil(b"\n")
            except asyncio.LimitOverrunError as error:
                rest = await self._reader.readexactly(error.consumed)
                head += rest[: max(0, _HEAD - len(head))]
                continue
            except asyncio.IncompleteReadError as error:
                rest = error.partial
            return head + rest[: max(0, _HEAD - len(head))]

    def _refuse(self, head: bytes) -> bytes | None:
        """Refuse a dropped message, going by its first bytes: a request gets
        -32600 under its id; a response is replaced by an error response, which
        is returned for the session to read (the call waiting for it fails);
        anything else gets -32600 under a null id."""
        request_id, response = jsonrpc.unreadable_sender(head)
        problem = f"message larger than {self._max} bytes (max_message_size)"
        if response and request_id is not None:
            logger.error("dropping the response to request %s: %s", quoted(request_id), problem)
            return jsonrpc.error_bytes(
                request_id, jsonrpc.INVALID_REQUEST, f"Invalid response: {problem}; it was dropped"
            )
        reply_to = request_id
        logger.error(
            "dropping a %s (%s)",
            problem,
            f"request {quoted(reply_to)}" if reply_to is not None else "no request id",
        )
        self.write(
            wire.response(
                jsonrpc.error_bytes(
                    reply_to, jsonrpc.INVALID_REQUEST, f"Invalid request: {problem}"
                ),
                reply_to,
            )
        )
        return None

    def write(self, message: Message) -> None:
        if self._closed or self._writer.is_closing():
            return
        waiting = self._writer.transport.get_write_buffer_size()
        if waiting > self._max_buffered:
            logger.error(
                "dropping the connection: the peer is not reading (%d bytes wait for it; max_buffered is %d)",
                waiting,
                self._max_buffered,
            )
            self._abort()
            return
        self._writer.write(message.data + b"\n")

    def _abort(self) -> None:
        """Drop the connection at once: what is buffered is discarded, and
        reading ends as if the peer had gone."""
        self._closed = True
        self._writer.transport.abort()
        self._reader.set_exception(
            ConnectionResetError("connection dropped: the peer is not reading")
        )

    def close_request_stream(self, request_id: RequestId) -> None:
        return None  # one stream for everything: nothing to close early

    async def drain(self) -> None:
        writer = self._writer
        if self._closed or writer.is_closing():
            return
        if writer.transport.get_write_buffer_size() <= self._low_water:
            # Not paused (a transport resumes writing at the low-water mark):
            # writer.drain() would return at once, through two coroutine frames.
            return
        try:
            await writer.drain()
        except (ConnectionError, OSError):
            self._closed = True

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            self._writer.close()
            await self._writer.wait_closed()
        except (ConnectionError, OSError):
            pass


# ------------------------------------------------------------------ server side


def configure_stdio_logging(level: int = logging.INFO) -> None:
    """Send logging to stderr, unless the application configured it already."""
    root = logging.getLogger()
    if not root.handlers:
        logging.basicConfig(
            stream=sys.stderr, level=level, format="%(levelname)s %(name)s: %(message)s"
        )


async def process_stdio(
    max_message_size: int = MAX_MESSAGE_SIZE, max_buffered: int = MAX_BUFFERED
) -> StreamTransport:
    """A transport over this process's stdin and stdout (see StreamTransport for the limits).

    The protocol keeps its own copy of stdout; ``sys.stdout`` and file
    descriptor 1 are pointed at stderr so that a stray ``print`` cannot
    corrupt the message stream.
    """
    loop = asyncio.get_running_loop()
    protocol_out: io.RawIOBase = os.fdopen(os.dup(sys.stdout.fileno()), "wb", buffering=0)
    sys.stdout.flush()
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    sys.stdout = sys.stderr

    reader = asyncio.StreamReader(limit=max_message_size)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin.buffer)
    writer: asyncio.StreamWriter | _FileWriter
    try:
        # StreamReaderProtocol (not the bare FlowControlMixin) so that the
        # writer's wait_closed() works.
        transport, protocol = await loop.connect_write_pipe(
            lambda: asyncio.StreamReaderProtocol(asyncio.StreamReader()), protocol_out
        )
        writer = asyncio.StreamWriter(transport, protocol, None, loop)
    except ValueError:  # stdout is a regular file: asyncio only streams to pipes
        writer = _FileWriter(protocol_out)
    return StreamTransport(
        reader, writer, max_message_size=max_message_size, max_buffered=max_buffered
    )


class _FileWriter:
    """The slice of StreamWriter that StreamTransport uses, for a regular file."""

    def __init__(self, file: io.RawIOBase) -> None:
        self._file = file
        self.transport = self  # writes are synchronous: nothing is ever buffered

    def get_write_buffer_size(self) -> int:
        return 0

    def abort(self) -> None:
        self._file.close()

    def write(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            written = self._file.write(view) or 0
            view = view[written:]

    def is_closing(self) -> bool:
        return self._file.closed

    async def drain(self) -> None:
        return None

    def close(self) -> None:
        self._file.close()

    async def wait_closed(self) -> None:
        return None


# ------------------------------------------------------------------ client side


@dataclass(frozen=True)
class StdioServerParameters:
    """How to start a server process."""

    command: str
    args: Sequence[str] = ()
    env: Mapping[str, str] | None = None
    """Variables added to (or replacing) this process's environment."""
    cwd: str | Path | None = None
    inherit_env: bool = True
    """Start from this process's environment (else only ``env``)."""
    stderr: int | None = None
    """Where the server's stderr goes: None inherits ours, or asyncio.subprocess.DEVNULL/PIPE."""
    terminate_timeout: float = 2.0


class ProcessTransport(StreamTransport):
    """A transport to a spawned server process that it also shuts down."""

    def __init__(
        self,
        process: asyncio.subprocess.Process,
        parameters: StdioServerParameters,
        limit: int,
        max_buffered: int = MAX_BUFFERED,
    ) -> None:
        assert process.stdout is not None and process.stdin is not None
        super().__init__(
            process.stdout, process.stdin, max_message_size=limit, max_buffered=max_buffered
        )
        self.process = process
        self.parameters = parameters

    @property
    def returncode(self) -> int | None:
        return self.process.returncode

    async def _reading_ended(self, closed_here: bool) -> None:
        if not closed_here:
            # Its stdout ended: give the process a moment to exit so that the
            # session can say how it ended.
            try:
                await asyncio.wait_for(self.process.wait(), 0.5)
            except asyncio.TimeoutError:
                pass

    def closed_reason(self) -> str | None:
        """Why the stream ended, for the error pending calls fail with."""
        code = self.process.returncode
        if code is None:
            return "the server process closed its stdout"
        if code < 0:
            return f"the server process was killed by signal {-code}"
        return f"the server process exited with code {code}"

    async def close(self) -> None:
        """Close stdin, then terminate, then kill: the server always ends.

        The process is stopped before waiting for stdin to finish closing: a
        server that stopped reading never takes the messages still buffered
        for it, and waiting for them first would wait forever.

        Cancelled meanwhile (the program told to stop while it waits for its
        servers: the official SDK closes a stdio server's stdin, then sends
        SIGTERM two seconds later), the server is not waited for any longer:
        its process group is terminated, then killed, within
        ``terminate_timeout``, before the cancellation goes on, so that no
        server outlives its client.
        """
        if not self._closed:
            self._closed = True
            try:
                self._writer.close()  # end of input, once the buffered messages are written
            except (ConnectionError, OSError):
                pass
        try:
            await self._stop()
        except asyncio.CancelledError:
            await asyncio.shield(self._end_now())
            raise
        try:
            await asyncio.wait_for(self._writer.wait_closed(), self.parameters.terminate_timeout)
        except (ConnectionError, OSError, asyncio.TimeoutError):
            pass

    async def _stop(self) -> None:
        process = self.process
        if process.returncode is not None:
            return
        timeout = self.parameters.terminate_timeout
        try:
            await asyncio.wait_for(
                process.wait(), timeout
            )  # its stdin is closed: a server ends by itself
            return
        except asyncio.TimeoutError:
            pass
        for stop in (self._terminate, self._kill):
            try:
                stop()
            except ProcessLookupError:
                return
            except PermissionError:
                pass  # a member of the group that may not be signalled: the others were
            if await self._ended(timeout):
                return
        await process.wait()

    async def _end_now(self) -> None:
        """Terminate the process group, and kill what is left of it after ``terminate_timeout``."""
        if self.process.returncode is not None and not (
            _OWN_PROCESS_GROUP and _group_alive(self.process.pid)
        ):
            return
        for stop in (self._terminate, self._kill):
            try:
                stop()
            except ProcessLookupError:
                return
            except PermissionError:
                pass
            if await self._ended(self.parameters.terminate_timeout / 2):
                return

    async def _ended(self, timeout: float) -> bool:
        """Whether the server (on POSIX, its whole process group) ended within ``timeout``."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        try:
            await asyncio.wait_for(self.process.wait(), timeout)
        except asyncio.TimeoutError:
            return False
        # What a launcher started may outlive it: nothing signals a group's
        # end, so look until its last member is gone.
        while _OWN_PROCESS_GROUP and _group_alive(self.process.pid):
            if loop.time() >= deadline:
                return False
            await asyncio.sleep(0.01)
        return True

    def _terminate(self) -> None:
        if _OWN_PROCESS_GROUP:
            os.killpg(self.process.pid, signal.SIGTERM)  # the server's pid is its group's id
        else:
            self.process.terminate()

    def _kill(self) -> None:
        if _OWN_PROCESS_GROUP:
            os.killpg(self.process.pid, signal.SIGKILL)
        else:
            self.process.kill()


def _group_alive(group: int) -> bool:
    try:
        os.killpg(group, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # a member we may not signal (or a zombie, on some systems): not gone
    return True


# A process group per server: what a launcher starts is signalled too.
_OWN_PROCESS_GROUP = os.name == "posix"


async def spawn(
    parameters: StdioServerParameters,
    max_message_size: int = MAX_MESSAGE_SIZE,
    max_buffered: int = MAX_BUFFERED,
) -> ProcessTransport:
    """Start the server process and return a transport to it."""
    env = dict(os.environ) if parameters.inherit_env else {}
    env.update(parameters.env or {})
    process = await asyncio.create_subprocess_exec(
        parameters.command,
        *parameters.args,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=parameters.stderr,
        env=env,
        cwd=parameters.cwd,
        limit=max_message_size,
        start_new_session=_OWN_PROCESS_GROUP,
    )
    return ProcessTransport(process, parameters, max_message_size, max_buffered)
