"""`python -m conformance bench`: where an example's time goes, and how fast shrinking is.

Per phase (generate, render, eager call, eager backward, backend call, backend backward,
oracles, report, other), the median time per example and its share of the wall time;
examples/s per worker and overall; and efficiency = backend time / wall time (the
backend's compile and run, which thunder does in one call, plus its backward).

`--shrink` instead finds each known issue's mismatch class from scratch and reports the
wall time from the first failing example to the minimal program, per issue and median.
"""

from __future__ import annotations

import hashlib
import json
import multiprocessing as mp
import statistics
import time
from pathlib import Path

PHASES = ("generate", "render", "eager call", "eager backward", "backend call", "backend backward", "oracles",
          "report", "other")
BACKEND_PHASES = ("backend call", "backend backward")


def _worker(spec: str, examples: int, seed: int, out, index: int = 0, of: int = 1) -> None:
    """Run the `examples` examples Hypothesis draws with `seed`; of those, every `of`-th from
    `index` on. Every worker draws the same examples, so that N workers run exactly the
    examples one worker runs, dealt out in turn: a static split into N streams of their own
    left one worker with the larger programs, and measured that, not the speed-up."""
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import seed as hseed

    from conformance.backends import get
    from conformance.check import run_example
    from conformance.report.records import record_of
    from conformance.runner import Timer
    from conformance.suite import examples as example_strategy

    backend = get(spec)
    per_example: list[dict] = []
    ran: list[str] = []  # what each example was, to check that the split is the same examples
    body_total = 0.0
    mismatching = 0
    drawn = 0

    def prop(example):
        nonlocal body_total, mismatching, drawn
        drawn += 1
        if (drawn - 1) % of != index:
            return
        ran.append(hashlib.sha1(repr(example).encode()).hexdigest()[:16])
        t0 = time.perf_counter()
        timer = Timer()
        result = run_example(example[0], backend, example[1], timer=timer)
        if result.mismatches:
            mismatching += 1
            with timer.phase("report"):
                from conformance.suite import finding_of

                record_of(finding_of(result, backend.name, []), backend)
        elapsed = time.perf_counter() - t0
        body_total += elapsed
        timer.seconds["other"] = max(0.0, elapsed - sum(timer.seconds.values()))
        per_example.append(timer.seconds)

    test = settings(max_examples=examples, database=None, deadline=None, phases=[Phase.generate],
                    suppress_health_check=list(HealthCheck))(given(example_strategy())(prop))
    test = hseed(seed)(test)
    start = time.perf_counter()
    test()
    wall = time.perf_counter() - start
    import resource

    out.put({"wall": wall, "body": body_total, "examples": per_example, "mismatching": mismatching,
             "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, "ran": ran})


def run_bench(spec: str, examples: int, workers: int, seed: int = 0) -> dict:
    ctx = mp.get_context("spawn")
    out = ctx.Queue()
    procs = [ctx.Process(target=_worker, args=(spec, examples, seed, out, i, workers)) for i in range(workers)]
    for p in procs:
        p.start()
    results = [out.get() for _ in procs]
    for p in procs:
        p.join()
    rows = [e for r in results for e in r["examples"]]
    for r in results:  # what Hypothesis spent outside the test body: drawing the examples
        gen = max(0.0, r["wall"] - r["body"]) / max(1, len(r["examples"]))
        for e in r["examples"]:
            e["generate"] = gen
    walls = [r["wall"] for r in results]
    total_wall = sum(r["wall"] for r in results)
    phase_total = {p: sum(e.get(p, 0.0) for e in rows) for p in PHASES}
    report = {
        "backend": spec, "examples": len(rows), "workers": workers,
        "phases": {p: {"median_ms": round(1000 * statistics.median([e.get(p, 0.0) for e in rows]), 3),
                       "share": round(phase_total[p] / total_wall, 4)} for p in PHASES},
        "examples_per_s_per_worker": round(statistics.mean(len(r["examples"]) / r["wall"] for r in results), 3),
        "examples_per_s": round(len(rows) / max(walls), 3),
        "efficiency": round(sum(phase_total[p] for p in BACKEND_PHASES) / total_wall, 4),
        "peak_rss_mb": round(max(r["peak_rss_mb"] for r in results), 1),
        "mismatching_examples": sum(r["mismatching"] for r in results),
        "example_ids": sorted(x for r in results for x in r["ran"]),
    }
    return report


def run_shrink_bench(spec: str, max_examples: int, shrink_seconds: float, only: list[str] | None = None,
                     on_row=None) -> dict:
    """Per known issue: find its mismatch class from scratch with the engine (a search, then the
    last pass); time from the first failing example to the minimal one. `on_row` gets each
    issue's row as soon as it is measured: a full run takes many minutes."""
    from hypothesis import HealthCheck, settings

    from conformance import known_issues
    from conformance.backends import get
    from conformance.check import run_example
    from conformance.engine import PHASES, context_of, examples, finding_of, focus, reduce_finding, search
    from conformance.oracles.mismatch import class_key
    from conformance.program import count_statements, render
    from conformance.report.signatures import signature
    from conformance.shrinking import Memo

    backend = get(spec)
    rows = []
    for issue in known_issues.load():
        if (only and issue.id not in only) or not issue.applies_to(backend.name):
            continue
        run = Memo(run_example)
        first: list[float] = []
        best: list = [None, None]  # (size, when) of the smallest failing program so far

        def hit(program, schedule, issue=issue, run=run, first=first, best=best):
            """The example led by its mismatch of the issue, or None."""
            result = run(program, backend, schedule)
            found = [m for m in result.mismatches if issue.match(signature(m, program, schedule), program, context_of(result, m))]
            if not found:
                return None
            now = time.perf_counter()
            if not first:
                first.append(now)
            size = (count_statements(program), len(schedule), len(render(program)))
            if best[0] is None or size < best[0]:
                best[0], best[1] = size, now
            return focus(result, lambda k, bug=class_key(found[0]): k != bug)

        start = time.perf_counter()
        failures = search(examples(), hit, settings(
            max_examples=max_examples, database=None, deadline=None, derandomize=True, phases=PHASES,
            report_multiple_bugs=False, suppress_health_check=list(HealthCheck)), shrink_seconds,
            digest=f"bench:{issue.id}")
        if failures:
            finding = reduce_finding(finding_of(failures[0], backend.name, [issue]), backend, [issue], run=run,
                                     budget=shrink_seconds)
            end = time.perf_counter()
            # to minimal: from the first failure until the final program first appeared; the
            # shrinker then spends the rest of its budget confirming nothing smaller fails.
            rows.append({"issue": issue.id, "found_after_s": round(first[0] - start, 2),
                         "to_minimal_s": round(best[1] - first[0], 2), "shrink_s": round(end - first[0], 2),
                         "statements": count_statements(finding.result.program)})
        else:
            rows.append({"issue": issue.id, "found_after_s": None, "to_minimal_s": None, "shrink_s": None,
                         "statements": None})
        if on_row is not None:
            on_row(rows[-1])
    times = [r["to_minimal_s"] for r in rows if r["to_minimal_s"] is not None]
    return {"backend": spec, "issues": rows, "median_to_minimal_s": statistics.median(times) if times else None,
            "median_shrink_s": statistics.median(r["shrink_s"] for r in rows if r["shrink_s"] is not None)
            if times else None, "found": len(times), "of": len(rows)}


def format_report(r: dict) -> str:
    if "issues" in r:
        lines = [f"shrinking on {r['backend']}: median {r['median_to_minimal_s']} s from first failure to the minimal "
                 f"program (shrinker done after {r['median_shrink_s']} s); {r['found']} of {r['of']} known issues found",
                 SHRINK_HEADER]
        return "\n".join(lines + [format_shrink_row(row) for row in r["issues"]])
    lines = [f"{r['examples']} examples on {r['backend']}, {r['workers']} worker(s)",
             f"{'phase':<18} {'median ms':>10} {'share':>7}"]
    for p, v in r["phases"].items():
        lines.append(f"{p:<18} {v['median_ms']:>10.2f} {100 * v['share']:>6.1f}%")
    lines.append(f"examples/s: {r['examples_per_s_per_worker']} per worker, {r['examples_per_s']} overall")
    lines.append(f"efficiency (backend time / wall time): {r['efficiency']}")
    lines.append(f"peak RSS per worker: {r['peak_rss_mb']} MB")
    lines.append(f"examples with a mismatch: {r['mismatching_examples']}")
    return "\n".join(lines)


SHRINK_HEADER = f"{'issue':<44} {'found s':>8} {'minimal s':>10} {'shrink s':>9} {'stmts':>6}"


def format_shrink_row(row: dict) -> str:
    def cell(key, width):
        return f"{row[key] if row[key] is not None else '-':>{width}}"

    return (f"{row['issue']:<44} {cell('found_after_s', 8)} {cell('to_minimal_s', 10)} "
            f"{cell('shrink_s', 9)} {cell('statements', 6)}")


def write_json(r: dict, path: Path) -> None:
    Path(path).write_text(json.dumps(r, indent=1))
