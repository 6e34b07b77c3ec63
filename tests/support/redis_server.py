"""Real Redis deployments for the tests, on free loopback ports, no persistence:
one ``redis-server`` (:class:`RedisServer`), a Redis Cluster of three primaries
(:class:`RedisClusterNodes`) and a primary with a replica watched by a Sentinel
(:class:`SentinelGroup`).

Debian's ``redis-server`` is used where it is on PATH; as root it is
installed (``apt-get install redis-server``) where it is missing. A server
can be stopped and started again on the same port (outage tests).
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from urllib.parse import quote

from support.everything_http import free_port
from support.needs import needs


def redis_server_binary() -> str:
    needs("redis", "redis-server")
    found = shutil.which("redis-server")
    if found is None and os.geteuid() == 0:
        subprocess.run(["apt-get", "update", "-qq"], check=True, capture_output=True)
        subprocess.run(
            ["apt-get", "install", "-y", "-qq", "redis-server"], check=True, capture_output=True
        )
        found = shutil.which("redis-server")
    if found is None:
        raise RuntimeError(
            "redis-server is not installed: apt-get install redis-server (Debian package)"
        )
    return found


class RedisServer:
    """One redis-server; ``extra`` are more of its command-line settings
    (``--requirepass``, ``--cluster-enabled``, ``--replicaof``...), ``password``
    the one its probes and :meth:`command` authenticate with."""

    def __init__(
        self, extra: Sequence[str] = (), port: int | None = None, password: str | None = None
    ) -> None:
        self.port = free_port() if port is None else port
        self.dir = Path(tempfile.mkdtemp(prefix="mcp-redis-"))
        self.extra = list(extra)
        self.password = password
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        auth = "" if self.password is None else f":{quote(self.password, safe='')}@"
        return f"redis://{auth}127.0.0.1:{self.port}/0"

    def arguments(self) -> list[str]:
        return [
            redis_server_binary(),
            "--port", str(self.port),
            "--bind", "127.0.0.1",
            "--dir", str(self.dir),
            "--save", "",
            "--appendonly", "no",
            "--protected-mode", "no",
            "--loglevel", "warning",
            *self.extra,
        ]  # fmt: skip

    def start(self, timeout: float = 20.0) -> None:
        command = self.arguments()
        self.process = subprocess.Popen(
            command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"redis-server exited with {self.process.returncode}")
            try:
                if self.command("PING").startswith(b"+PONG"):
                    return
            except OSError:
                pass
            time.sleep(0.05)
        raise RuntimeError("redis-server did not start")

    def stop(self) -> None:
        if self.process is not None:
            if self.process.poll() is None:
                os.kill(self.process.pid, signal.SIGCONT)  # a frozen one would not end
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
            self.process = None

    def freeze(self) -> None:
        """SIGSTOP: Redis stalls as a hung host does. Connections are still accepted
        (by the kernel, up to the backlog) and commands are sent; nothing is answered."""
        assert self.process is not None
        os.kill(self.process.pid, signal.SIGSTOP)

    def thaw(self) -> None:
        """SIGCONT: Redis answers again, what was sent while it was frozen first."""
        assert self.process is not None
        os.kill(self.process.pid, signal.SIGCONT)

    def command(self, *args: str) -> bytes:
        """One command with redis-cli's wire format (no client library): its raw reply
        (after the ``+OK`` of an ``AUTH`` when the server has a password)."""
        wire = b""
        if self.password is not None:
            wire = _encode("AUTH", self.password)
        with socket.create_connection(("127.0.0.1", self.port), timeout=5) as conn:
            conn.sendall(wire + _encode(*args))
            conn.shutdown(socket.SHUT_WR)
            chunks = []
            while chunk := conn.recv(65536):
                chunks.append(chunk)
        reply = b"".join(chunks)
        if self.password is not None and reply.startswith(b"+OK\r\n"):
            reply = reply[len(b"+OK\r\n") :]
        return reply

    def close(self) -> None:
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)


def _encode(*args: str) -> bytes:
    parts = [f"*{len(args)}\r\n".encode()]
    for arg in args:
        parts.append(f"${len(arg.encode())}\r\n{arg}\r\n".encode())
    return b"".join(parts)


def cluster_port() -> int:
    """A free port whose cluster bus port (the port + 10000) is free too."""
    while True:
        port = free_port()
        if port + 10000 > 65535:
            continue
        with socket.socket() as probe:
            try:
                probe.bind(("127.0.0.1", port + 10000))
            except OSError:
                continue
        return port


class RedisClusterNodes:
    """A Redis Cluster of three primaries (no replicas), made by
    ``redis-cli --cluster create``; its URL names the first node. With ``tls``
    (a certificate and its key, PEM files) clients and the cluster bus speak TLS
    (``--tls-cluster yes``: the nodes announce their TLS ports); each node keeps a
    plain port for the tests' own probes."""

    def __init__(self, primaries: int = 3, tls: tuple[Path, Path] | None = None) -> None:
        self.tls = tls
        self.tls_ports: list[int] = []
        self.nodes = []
        for _ in range(primaries):
            settings = ["--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
                        "--cluster-node-timeout", "2000"]  # fmt: skip
            port = cluster_port()
            if tls is not None:
                # The cluster bus listens beside the announced (TLS) port.
                self.tls_ports.append(port)
                cert, key = tls
                settings += ["--tls-port", str(port), "--tls-cert-file", str(cert),
                             "--tls-key-file", str(key), "--tls-ca-cert-file", str(cert),
                             "--tls-auth-clients", "no", "--tls-cluster", "yes"]  # fmt: skip
                port = free_port()
            self.nodes.append(RedisServer(settings, port=port))

    @property
    def ports(self) -> list[int]:
        """The ports clients reach the nodes on (the TLS ones with ``tls``)."""
        return self.tls_ports if self.tls is not None else [node.port for node in self.nodes]

    @property
    def url(self) -> str:
        scheme = "rediss+cluster" if self.tls is not None else "redis+cluster"
        return f"{scheme}://127.0.0.1:{self.ports[0]}"

    def start(self, timeout: float = 30.0) -> None:
        for node in self.nodes:
            node.start()
        cli = shutil.which("redis-cli") or "redis-cli"
        secure = [] if self.tls is None else ["--tls", "--cacert", str(self.tls[0])]
        subprocess.run(
            [cli, *secure, "--cluster", "create", *(f"127.0.0.1:{port}" for port in self.ports),
             "--cluster-replicas", "0", "--cluster-yes"],
            check=True, capture_output=True, timeout=timeout,
        )  # fmt: skip
        deadline = time.monotonic() + timeout
        while not all(
            b"cluster_state:ok" in node.command("CLUSTER", "INFO") for node in self.nodes
        ):
            if time.monotonic() > deadline:
                raise RuntimeError("the Redis Cluster did not come up")
            time.sleep(0.1)

    def close(self) -> None:
        for node in self.nodes:
            node.close()


class SentinelGroup:
    """A primary and its replica, watched by one Sentinel (quorum 1) under
    the service name ``mymaster``; the URL names the Sentinel."""

    service = "mymaster"

    def __init__(self, password: str | None = None) -> None:
        auth = [] if password is None else ["--requirepass", password, "--masterauth", password]
        self.primary = RedisServer(auth, password=password)
        self.replica = RedisServer(
            [*auth, "--replicaof", "127.0.0.1", str(self.primary.port)], password=password
        )
        self.password = password
        self.sentinel_port = free_port()
        self.sentinel_dir = Path(tempfile.mkdtemp(prefix="mcp-sentinel-"))
        self.sentinel: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        auth = "" if self.password is None else f":{quote(self.password, safe='')}@"
        return f"redis+sentinel://{auth}127.0.0.1:{self.sentinel_port}/{self.service}/0"

    def sentinel_command(self, *args: str) -> bytes:
        return RedisServer(port=self.sentinel_port).command(*args)

    def start(self, timeout: float = 30.0) -> None:
        self.primary.start()
        self.replica.start()
        config = self.sentinel_dir / "sentinel.conf"
        lines = [
            f"port {self.sentinel_port}",
            "bind 127.0.0.1",
            "protected-mode no",
            f"dir {self.sentinel_dir}",
            f"sentinel monitor {self.service} 127.0.0.1 {self.primary.port} 1",
            f"sentinel down-after-milliseconds {self.service} 2000",
            f"sentinel failover-timeout {self.service} 10000",
        ]
        if self.password is not None:
            lines.append(f"sentinel auth-pass {self.service} {self.password}")
        config.write_text("\n".join(lines) + "\n")
        self.sentinel = subprocess.Popen(
            [redis_server_binary(), str(config), "--sentinel"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + timeout
        # Up once the replica has caught up and the Sentinel knows it (a failover needs one).
        while True:
            try:
                if b"master_link_status:up" in self.replica.command("INFO", "replication") and str(
                    self.replica.port
                ).encode() in self.sentinel_command("SENTINEL", "REPLICAS", self.service):
                    return
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError("the Sentinel group did not come up")
            time.sleep(0.1)

    def primary_port(self) -> int:
        """The port of the primary the Sentinel names now."""
        reply = self.sentinel_command("SENTINEL", "GET-MASTER-ADDR-BY-NAME", self.service)
        return int(reply.split(b"\r\n")[-2])

    def fail_over(self, timeout: float = 30.0) -> int:
        """``SENTINEL FAILOVER``, then wait until the replica is the primary
        (promoted, and named by the Sentinel); its port."""
        before = self.primary_port()
        reply = self.sentinel_command("SENTINEL", "FAILOVER", self.service)
        if not reply.startswith(b"+OK"):
            raise RuntimeError(f"SENTINEL FAILOVER: {reply!r}")
        deadline = time.monotonic() + timeout
        while True:
            after = self.primary_port()
            promoted = self.replica if after == self.replica.port else self.primary
            if after != before and b"role:master" in promoted.command("INFO", "replication"):
                return after
            if time.monotonic() > deadline:
                raise RuntimeError("the failover did not complete")
            time.sleep(0.1)

    def close(self) -> None:
        if self.sentinel is not None:
            self.sentinel.terminate()
            self.sentinel.wait(10)
            self.sentinel = None
        shutil.rmtree(self.sentinel_dir, ignore_errors=True)
        self.replica.close()
        self.primary.close()
