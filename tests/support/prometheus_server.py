"""A real Prometheus server (Debian's ``prometheus``) scraping one target on
loopback every second, asked through its HTTP query API. Installed with
apt-get where it is missing and the tests run as root, as redis-server is."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import time
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

from support.everything_http import free_port
from support.needs import needs


def prometheus_binary() -> str:
    needs("peers", "prometheus")
    found = shutil.which("prometheus")
    if found is None and os.geteuid() == 0:
        subprocess.run(["apt-get", "update", "-qq"], check=True, capture_output=True)
        subprocess.run(
            ["apt-get", "install", "-y", "-qq", "prometheus"], check=True, capture_output=True
        )
        found = shutil.which("prometheus")
    if found is None:
        raise RuntimeError(
            "prometheus is not installed: apt-get install prometheus (Debian package)"
        )
    return found


class PrometheusServer:
    """``prometheus`` scraping ``target`` (host:port) at ``path`` every second."""

    def __init__(self, target: str, path: str = "/metrics") -> None:
        self.port = free_port()
        self.dir = Path(tempfile.mkdtemp(prefix="mcp-prometheus-"))
        (self.dir / "prometheus.yml").write_text(
            "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
            "scrape_configs:\n  - job_name: mcp\n"
            f"    metrics_path: {path}\n    static_configs:\n      - targets: ['{target}']\n"
        )
        self.process: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> PrometheusServer:
        self.process = subprocess.Popen(
            [
                prometheus_binary(),
                f"--config.file={self.dir / 'prometheus.yml'}",
                f"--storage.tsdb.path={self.dir / 'data'}",
                f"--web.listen-address=127.0.0.1:{self.port}",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/-/ready", timeout=2):
                    return self
            except OSError:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("prometheus did not start") from None
                time.sleep(0.2)

    def __exit__(self, *exc: object) -> None:
        if self.process is not None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        shutil.rmtree(self.dir, ignore_errors=True)

    def query(self, promql: str) -> list[dict[str, Any]]:
        """The result vector of an instant query."""
        url = f"http://127.0.0.1:{self.port}/api/v1/query?" + urllib.parse.urlencode(
            {"query": promql}
        )
        with urllib.request.urlopen(url, timeout=10) as response:
            answer = json.load(response)
        assert answer["status"] == "success", answer
        return answer["data"]["result"]  # type: ignore[no-any-return]
