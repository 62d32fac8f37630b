"""How soon a night catches each planted fault (benchmarks/planted_faults.py).

    python -m benchmarks.first_catch [--engine DIR] [--faults a,b] [--seeds 1,2] [--seconds 60] [--workers 2]

For each fault and seed, runs `python -m conformance fuzz` from DIR (a checkout of the engine
to measure, this one by default), then replays each recorded program on plain thunder: a
record whose class of mismatch plain thunder does not show on its program is a catch of the
fault. Prints, per fault and seed, the seconds and examples of the first catch ("-": none), and
of the first catch the night reported as new: one it took for a known issue of thunder is a
fault the registry hid from its reader.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def night(engine: Path, fault: str, seed: int, seconds: float, workers: int, folder: Path) -> dict:
    env = {**os.environ, "PYTHONPATH": f"{engine}{os.pathsep}{ROOT}"}
    subprocess.run([sys.executable, "-m", "conformance", "fuzz", "--backend", f"benchmarks.planted_faults:{fault}",
                    "--seconds", str(seconds), "--workers", str(workers), "--seed", str(seed),
                    "--report-dir", str(folder)], cwd=engine, env=env, capture_output=True, text=True, check=False)
    return json.loads((folder / "summary.json").read_text())


def first_catch(summary: dict) -> tuple[tuple[float, int] | None, tuple[float, int] | None]:
    """(seconds, examples) of the first record that plain thunder does not show, and of the
    first such record that the night did not take for a known issue."""
    from conformance import serialize
    from conformance.backends import get
    from conformance.check import run_example
    from conformance.oracles.mismatch import class_key

    thunder = get("thunder")
    catches, new = [], []
    for m in summary["mismatches"]:
        if not m.get("program") or m.get("found_after_seconds") is None:
            continue
        program, schedule = serialize.decode(m["program"]), serialize.decode(m["schedule"])
        planted = {class_key(x) for x in run_example(program, get(summary["backend"]), schedule).mismatches}
        plain = {class_key(x) for x in run_example(program, thunder, schedule).mismatches}
        if planted - plain:
            catches.append((m["found_after_seconds"], m["found_after_examples"]))
            if not m.get("known"):  # summary.json: a bool
                new.append(catches[-1])
    return min(catches, default=None), min(new, default=None)


def main(argv=None) -> int:
    from benchmarks.planted_faults import FAULTS

    p = argparse.ArgumentParser(prog="python -m benchmarks.first_catch", description=__doc__.splitlines()[0])
    p.add_argument("--engine", type=Path, default=ROOT, help="the checkout whose engine runs the nights")
    p.add_argument("--faults", default=",".join(FAULTS))
    p.add_argument("--seeds", default="1,2")
    p.add_argument("--seconds", type=float, default=60.0)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--json", type=Path, help="also write the rows here")
    args = p.parse_args(argv)
    rows = []
    print(f"{'fault':<26} {'seed':>4} {'first catch s':>13} {'examples':>8} {'first new s':>11} {'examples':>8}",
          flush=True)
    for fault in args.faults.split(","):
        for seed in (int(s) for s in args.seeds.split(",")):
            with tempfile.TemporaryDirectory() as tmp:
                caught, new = first_catch(night(args.engine.resolve(), fault, seed, args.seconds, args.workers,
                                                Path(tmp)))
            rows.append({"fault": fault, "seed": seed, "seconds": caught and caught[0],
                         "examples": caught and caught[1], "new_seconds": new and new[0],
                         "new_examples": new and new[1]})
            cells = [f"{c[0]:.1f} {c[1]:>8}" if c else f"{'-'} {'-':>8}" for c in (caught, new)]
            print(f"{fault:<26} {seed:>4} {cells[0]:>22} {cells[1]:>20}", flush=True)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
