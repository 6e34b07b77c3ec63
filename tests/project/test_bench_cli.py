"""``python -m bench`` writes the tracked results only when asked, and says
when a run is shorter than the defaults (its figures then judge no target)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def bench(*args: str) -> subprocess.CompletedProcess[str]:
    # The import part is the shortest: two fresh interpreters per sample.
    return subprocess.run(
        [sys.executable, "-m", "bench", "--parts", "imports", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_prints_only_without_write(tmp_path: Path) -> None:
    done = bench("--import-samples", "1", "--output", str(tmp_path))
    assert done.returncode == 0, done.stderr
    assert "cold import" in done.stdout
    assert list(tmp_path.iterdir()) == []
    assert "not written" in done.stderr


def test_a_shortened_run_says_so(tmp_path: Path) -> None:
    done = bench("--import-samples", "1", "--output", str(tmp_path), "--write")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("SHORTENED RUN (cold import)")
    assert "FAIL" not in done.stdout
    results = json.loads((tmp_path / "results.json").read_text())
    assert results["settings"]["shortened"] is True
    assert "SHORTENED RUN" in (tmp_path / "results.md").read_text()


def test_the_bindings_part_generates_a_facade_and_reports_both_calls() -> None:
    """The part generates and imports a facade, checks it answers what the untyped
    call answers, and prints both rows and the target (not judged: shortened)."""
    done = subprocess.run(
        [sys.executable, "-m", "bench", "--parts", "bindings", "--quick", "--bindings-calls", "20"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("SHORTENED RUN (typed server bindings)")
    text = " ".join(done.stdout.split())  # long labels are wrapped to fit 100 columns
    assert "tools/call through the generated facade" in text
    assert "the same call untyped" in text
    assert "a facade call within 10% of the untyped call" in text
    assert "FAIL" not in text


def test_what_it_prints_fits_100_columns(tmp_path: Path) -> None:
    """The tables, the machine and versions lines, the banner and the progress
    lines; the whole report is in the files it names."""
    done = bench("--import-samples", "1", "--output", str(tmp_path))
    assert done.returncode == 0, done.stderr
    for line in done.stdout.splitlines() + done.stderr.splitlines():
        assert len(line) <= 100, line
    details = Path(re.findall(r"/\S+/results\.md", done.stderr)[0])
    assert "cold import" in details.read_text()
