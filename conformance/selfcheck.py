"""`python -m conformance selfcheck`: the mutation self-test.

Each mutant breaks one thing on purpose: the four parts of thunder's grad-mode support
(backends/mutants.py) and faults of other kinds on eager (backends/faulty.py). A mutant
is caught on an example where it shows a kind of mismatch (oracles.mismatch.class_key)
that its unbroken base does not show on that same example, so thunder's own known bugs
never count as catches. Reported per mutant: caught or not, by which oracles, after how
many examples and seconds, with the median over seeds.
"""

from __future__ import annotations

import statistics
import time

from conformance.backends.faulty import FAULTS
from conformance.backends.mutants import MUTANTS

# (mutant name, its SPEC, the SPEC of what it breaks; None: eager, where any mismatch is new)
ALL = [(name, f"conformance.backends.mutants:{name}", "thunder") for name in MUTANTS] + [
    (name, f"conformance.backends.faulty:{name}", None) for name in FAULTS]


def _keys(result) -> set[str]:
    from conformance.oracles.mismatch import class_key

    return {class_key(m) for m in result.mismatches}


def hunt(spec: str, base_spec: str | None, max_examples: int, seed: int) -> dict:
    """Draw examples (the engine's search, no shrinking) until one shows the mutant's fault."""
    from hypothesis import HealthCheck, Phase, settings

    from conformance.backends import get
    from conformance.check import run_example
    from conformance.engine import examples, focus, search

    mutant = get(spec)
    base = get(base_spec) if base_spec else None
    count = 0
    caught_by: set[str] = set()

    def caught(program, schedule):
        nonlocal count
        count += 1
        result = run_example(program, mutant, schedule)
        keys = _keys(result)
        if keys and base is not None:
            keys -= _keys(run_example(program, base, schedule))
        caught_by.update(k.oracle for k in keys)
        return focus(result, lambda k: k not in keys) if keys else None

    start = time.perf_counter()
    found = search(examples(), caught, settings(max_examples=max_examples, database=None, deadline=None,
                                                phases=[Phase.generate], report_multiple_bugs=False,
                                                suppress_health_check=list(HealthCheck)),
                   budget=1.0, seed=seed, digest=f"selfcheck:{spec}")
    return {"caught": bool(found), "examples": count, "seconds": round(time.perf_counter() - start, 2),
            "oracles": sorted(caught_by)}


def selfcheck(max_examples: int = 200, seeds: int = 1, only: list[str] | None = None) -> list[dict]:
    rows = []
    for name, spec, base in ALL:
        if only and name not in only:
            continue
        runs = [hunt(spec, base, max_examples, s) for s in range(seeds)]
        caught = [r for r in runs if r["caught"]]
        rows.append({
            "mutant": name, "breaks": "thunder" if base else "eager",
            "caught": len(caught) == len(runs),
            "median_examples": statistics.median(r["examples"] for r in caught) if caught else None,
            "median_seconds": statistics.median(r["seconds"] for r in caught) if caught else None,
            "oracles": sorted({o for r in runs for o in r["oracles"]}),
            "runs": runs,
        })
    return rows


def format_rows(rows: list[dict]) -> str:
    lines = [f"{'mutant':<28} {'of':<8} {'caught':<7} {'median ex.':>10} {'median s':>9}  oracles"]
    for r in rows:
        lines.append(f"{r['mutant']:<28} {r['breaks']:<8} {'yes' if r['caught'] else 'NO':<7} "
                     f"{r['median_examples'] if r['median_examples'] is not None else '-':>10} "
                     f"{r['median_seconds'] if r['median_seconds'] is not None else '-':>9}  {', '.join(r['oracles'])}")
    return "\n".join(lines)
