"""Smoke tests of `python -m conformance bench`: every phase reported, shares that add up, the
same examples for any number of workers. (`--shrink` runs thunder: conformance/test_bench_shrink.py.)"""

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
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


@pytest.mark.slow
def test_two_workers_run_the_same_examples_as_one(tmp_path):
    def ids(workers):
        out = tmp_path / f"bench{workers}.json"
        proc = subprocess.run([sys.executable, "-m", "conformance", "bench", "--backend", "eager", "--examples", "12",
                               "--workers", str(workers), "--json", str(out)], cwd=ROOT, capture_output=True,
                              text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr
        return json.loads(out.read_text())["example_ids"]

    one, two = ids(1), ids(2)
    assert len(one) == 12 and one == two
