"""The official MCP conformance suite against examples/everything_server.py
and examples/conformance_client.py, for each requirement set of the pinned
suite (2025-11-25 at the handshake wire, 2026-07-28 at the stateless one).

Every server scenario a set runs must pass with no failed check and no
warning: the required ones and the ones the suite runs without scoring them
(the tasks extension, pending scenarios), except what
``conformance.EXPECTED_FAILURES`` lists with its reason. So must every
client scenario of each set, the authorization ones (a test authorization
server per scenario) included.
"""

from __future__ import annotations

from pathlib import Path

import conformance
import pytest

pytestmark = pytest.mark.node

# What the pinned suite (0.2.0-alpha.12) runs for a server: required, not scored.
SERVER_COUNTS = {"2025-11-25": (30, 3), "2026-07-28": (37, 13)}
CLIENT_COUNTS = {"2025-11-25": (18, 7), "2026-07-28": (32, 7)}


def _fail_with(report: conformance.Report, items: list[conformance.Scenario]) -> None:
    failing = [s for s in items if not s.ok and not s.expected]
    stale = [s for s in items if s.ok and s.expected]
    if not failing and not stale:
        return
    lines = [f"{len(failing)} of {len(items)} scenarios failed (results: {report.results_dir}):"]
    for scenario in failing:
        note = "" if scenario.scored else f" (not scored: {scenario.reason})"
        lines.append(
            f"{scenario.name}{note}: {scenario.passed} passed, {scenario.failed} failed, {scenario.warnings} warnings"
        )
        lines.extend(f"    {problem}" for problem in scenario.problems)
    lines.extend(f"{s.key} passes now: remove it from EXPECTED_FAILURES" for s in stale)
    pytest.fail("\n".join(lines), pytrace=False)


@pytest.mark.timeout(900)
@pytest.mark.parametrize("revision", conformance.REVISIONS)
def test_server_scenarios_pass(revision: str, tmp_path: Path) -> None:
    try:
        report = conformance.run(results_dir=tmp_path / "conformance", revisions=[revision])
    except conformance.SetupError as error:
        pytest.fail(str(error), pytrace=False)

    items = report.of(revision, "server")
    counts = (sum(s.scored for s in items), sum(not s.scored for s in items))
    assert (
        counts == SERVER_COUNTS[revision]
    ), f"the suite runs other server scenarios than expected: {counts}"
    _fail_with(report, items)


@pytest.mark.timeout(900)
@pytest.mark.parametrize("revision", conformance.REVISIONS)
def test_client_scenarios_pass(revision: str, tmp_path: Path) -> None:
    try:
        report = conformance.run(
            results_dir=tmp_path / "conformance",
            revisions=[revision],
            server=False,
            client_command=conformance.DEFAULT_CLIENT_COMMAND,
        )
    except conformance.SetupError as error:
        pytest.fail(str(error), pytrace=False)

    items = report.of(revision, "client")
    counts = (sum(s.scored for s in items), sum(not s.scored for s in items))
    assert (
        counts == CLIENT_COUNTS[revision]
    ), f"the suite runs other client scenarios than expected: {counts}"
    _fail_with(report, items)
