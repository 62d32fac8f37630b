"""`python -m conformance bench --shrink` times one known issue from its first failure to a short
program. Here, beside the suite, because it runs thunder: tests/ runs on fast fake backends."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_bench_shrink_times_one_known_issue(tmp_path):
    pytest.importorskip("thunder", reason="thunder is not installed: --shrink times a known issue of thunder")
    out = tmp_path / "shrink.json"
    proc = subprocess.run([sys.executable, "-m", "conformance", "bench", "--backend", "thunder", "--shrink",
                           "--issues", "requires-grad-method-unsupported", "--examples", "100",
                           "--shrink-seconds", "20", "--json", str(out)],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    r = json.loads(out.read_text())
    [row] = r["issues"]
    assert (r["found"], r["of"], row["issue"]) == (1, 1, "requires-grad-method-unsupported")
    assert 0 <= row["to_minimal_s"] <= row["shrink_s"] and r["median_to_minimal_s"] == row["to_minimal_s"]
    from conformance.suite import MAX_STATEMENTS

    assert row["statements"] <= MAX_STATEMENTS, row  # the minimal body is `a.requires_grad_()`
    assert any(line.startswith("requires-grad-method-unsupported ") for line in proc.stderr.splitlines())
