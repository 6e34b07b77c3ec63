"""The official MCP conformance suite against examples/everything_server.py
and examples/conformance_client.py.

Every server scenario listed for spec versions 2025-06-18 and 2025-11-25
(pending ones included) and the client scenarios initialize, tools_call,
elicitation-sep1034-client-defaults and sse-retry must pass, with no failed
check and no warning.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import conformance

# The pinned suite (0.1.16) lists 26 server scenarios for 2025-06-18 and 32
# for 2025-11-25, the first 26 included.
EXPECTED_COUNTS = {"2025-06-18": 26, "2025-11-25": 32}


@pytest.mark.timeout(600)
def test_every_server_scenario_passes(tmp_path: Path) -> None:
    try:
        report = conformance.run(results_dir=tmp_path / "conformance", spec_versions=EXPECTED_COUNTS)
    except conformance.SetupError as error:
        pytest.fail(str(error), pytrace=False)

    counts = {
        version: sum(version in scenario.specs for scenario in report.server) for version in EXPECTED_COUNTS
    }
    assert counts == EXPECTED_COUNTS, f"the suite lists other server scenarios than expected: {counts}"
    assert len(report.server) == EXPECTED_COUNTS["2025-11-25"]

    failing = [scenario for scenario in report.server if not scenario.ok]
    if failing:
        lines = [f"{len(failing)} of {len(report.server)} server scenarios failed (results: {report.results_dir}):"]
        for scenario in failing:
            lines.append(f"{scenario.name}: {scenario.passed} passed, {scenario.failed} failed, {scenario.warnings} warnings")
            lines.extend(f"    {problem}" for problem in scenario.problems)
        pytest.fail("\n".join(lines), pytrace=False)


@pytest.mark.timeout(600)
def test_client_scenarios_pass(tmp_path: Path) -> None:
    try:
        report = conformance.run(
            results_dir=tmp_path / "conformance",
            server=False,
            client_command=conformance.DEFAULT_CLIENT_COMMAND,
            client_scenarios=conformance.CLIENT_SCENARIOS,
        )
    except conformance.SetupError as error:
        pytest.fail(str(error), pytrace=False)
    assert [scenario.name for scenario in report.client] == list(conformance.CLIENT_SCENARIOS)
    failing = [scenario for scenario in report.client if not scenario.ok]
    if failing:
        lines = [f"{len(failing)} of {len(report.client)} client scenarios failed (results: {report.results_dir}):"]
        for scenario in failing:
            lines.append(f"{scenario.name}: {scenario.passed} passed, {scenario.failed} failed, {scenario.warnings} warnings")
            lines.extend(f"    {problem}" for problem in scenario.problems)
        pytest.fail("\n".join(lines), pytrace=False)
