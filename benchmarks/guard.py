"""The regression guard: which of the 33 known issues of thunder 0.2.6 that the guard was set on
(known_issues.toml at cb8778e) a night met, and with how short a repro.

    python -m benchmarks.guard DIR/summary.json [DIR2/summary.json ...]

A night meets an issue where one of its records is classified as that issue. Prints, per
night: examples, issues of the guard met, of them with a repro of at most 5 statements, the
records not taken for a known issue (new), the issues found since the guard was set, the second
its last guard issue was first met, and the guard issues missed. The guard asks, of a 10-minute
2-worker night on seeds 1, 2 and 3, at least 30 with a repro of at most 5 statements.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

# The ids of the registry when the guard was set (cb8778e); none has been renamed since.
GUARD = (
    "requires-grad-method-unsupported", "creation-requires-grad-kwarg-unsupported",
    "is-grad-enabled-reads-ambient-mode", "grad-mode-not-written-back-on-cache-hit",
    "grad-mode-not-written-back-when-call-raises", "outputs-require-grad-spuriously",
    "inference-mode-ignored", "inplace-from-grad-tensor-loses-autograd",
    "inplace-while-grad-off-drops-requires-grad", "zero-dim-flip-returns-input",
    "empty-inputs-treated-as-aliases", "missing-gradient-transform", "leaf-inplace-check-differs",
    "backward-fails-after-grad-mode-changes", "more-permissive-than-eager",
    "set-grad-enabled-marker-assertion", "no-grad-view-error-raised-wrongly", "dtype-check-fails",
    "inplace-through-alias-of-grad-tensor-lost", "matmul-size-zero-batch-zero-division",
    "arange-empty-slice-index-error", "cpu-scalar-broadcast-cotangent-unsummed",
    "no-grad-view-requires-grad-dropped", "int-unary-then-double-scalar-with-grad-promotes-to-double",
    "relu-of-nan-is-zero-with-grad", "slice-backward-pads-size-zero-dim",
    "inplace-on-view-of-zero-dim-backward-zeros-typeerror", "matmul-size-one-vector-backward-grad-shape",
    "inplace-mul-backward-reads-updated-target", "sigmoid-backward-nan-for-large-negative-input",
    "clamp-backward-differs-at-bounds-and-nan", "copy-broadcast-shapes-error",
    "copy-overwritten-input-gradient-none",
)
MAX_STATEMENTS = 5


def row(summary: dict) -> dict:
    """What one night's summary.json says of the guard's issues."""
    shortest: dict[str, int] = {}
    first: dict[str, float] = {}
    new = 0
    for m in summary["mismatches"]:
        issue = m.get("known_issue") if m.get("known") else None
        if issue is None:
            new += m.get("program") is not None
            continue
        if m.get("statements") is not None:
            shortest[issue] = min(shortest.get(issue, m["statements"]), m["statements"])
        if m.get("found_after_seconds") is not None:
            first[issue] = min(first.get(issue, m["found_after_seconds"]), m["found_after_seconds"])
    met = [i for i in GUARD if i in shortest]
    return {"seed": summary.get("seed"), "examples": summary.get("examples"), "met": len(met),
            "short": sum(shortest[i] <= MAX_STATEMENTS for i in met), "new": new,
            "since": sorted(set(shortest) - set(GUARD)), "last": max((first[i] for i in met if i in first), default=None),
            "missed": [i for i in GUARD if i not in shortest],
            "long": {i: shortest[i] for i in met if shortest[i] > MAX_STATEMENTS}}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.guard", description=__doc__.splitlines()[0])
    p.add_argument("summaries", nargs="+", type=Path)
    args = p.parse_args(argv)
    for path in args.summaries:
        try:
            r = row(json.loads(path.read_text()))
        except (OSError, ValueError, KeyError) as e:
            print(f"guard: cannot read {path} as a night's summary.json: {e}", file=sys.stderr)
            return 2
        last = f"{r['last']:.0f} s" if r["last"] is not None else "-"
        print(f"{path}: seed {r['seed']}, {r['examples']:,} examples; of the {len(GUARD)} guard issues met "
              f"{r['met']}, with a repro of at most {MAX_STATEMENTS} statements {r['short']}; new {r['new']}; "
              f"since the guard {len(r['since'])}; last guard issue first met at {last}")
        print(f"  missed: {', '.join(r['missed']) or '-'}")
        if r["long"]:
            print(f"  long: {', '.join(f'{i} {n}' for i, n in r['long'].items())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
