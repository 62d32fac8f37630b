"""Smoke tests of `python -m conformance bench`: every phase reported, shares that add up;
and `--shrink` timing one known issue from its first failure to a short program."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_bench_reports_every_phase(tmp_path):
    out = tmp_path / "bench.json"
    proc = subprocess.run([sys.executable, "-m", "conformance", "bench", "--backend",
                           "conformance.backends.faulty:perturbs_outputs", "--examples", "12", "--workers", "1",
                           "--json", str(out)], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    r = json.loads(out.read_text())
    assert r["examples"] == 12 and r["workers"] == 1
    from conformance.bench import PHASES

    assert set(r["phases"]) == set(PHASES)
    shares = sum(v["share"] for v in r["phases"].values())
    assert 0.9 < shares < 1.1, r["phases"]
    assert 0 < r["efficiency"] < 1 and r["examples_per_s"] > 0
    assert r["phases"]["report"]["share"] > 0  # this backend mismatches: records get built
    assert "efficiency" in proc.stdout


def test_bench_shrink_times_one_known_issue(tmp_path):
    pytest.importorskip("thunder")
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


def test_two_workers_run_the_same_examples_as_one(tmp_path):
    def ids(workers):
        out = tmp_path / f"bench{workers}.json"
        proc = subprocess.run([sys.executable, "-m", "conformance", "bench", "--backend", "eager", "--examples", "30",
                               "--workers", str(workers), "--json", str(out)], cwd=ROOT, capture_output=True,
                              text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr
        return json.loads(out.read_text())["example_ids"]

    one, two = ids(1), ids(2)
    assert len(one) == 30 and one == two
