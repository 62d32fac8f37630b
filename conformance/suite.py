"""The property runner behind every area test of the conformance suite.

`check_area` runs Hypothesis over (program, schedule) examples against a backend. Each
mismatch makes the example fail; Hypothesis shrinks it, one class per kind of mismatch;
the shrunk failures are then sorted into known issues (recorded, suite stays green) and
new ones (recorded, and the test fails loudly with the minimal program). Exceptions that
are not mismatches are harness bugs and propagate untouched.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable

from hypothesis import Phase, event, given, note, settings
from hypothesis.database import InMemoryExampleDatabase
from hypothesis import strategies as st

from conformance import known_issues as KI
from conformance.check import Result, failure_message, raise_for, run_example
from conformance.generators import STATEMENT_KINDS, programs, schedules
from conformance.oracles.mismatch import ConformanceMismatch, class_key
from conformance.program import REGION_KINDS, constructs, count_statements
from conformance.reduction import reduce
from conformance.report.signatures import signature
from conformance.shrinking import DEFAULT_SHRINK_SECONDS, Budget, Memo, shrink_budget


@dataclass
class Finding:
    signature: str
    result: Result
    known: KI.KnownIssue | None


# The limits of a small example: regions one level deep, at most three statements a block,
# at most three calls. Most bugs have small counterexamples (the small-scope hypothesis): every
# known issue's repro has 2-4 statements, and the rarest need a conjunction (a NaN reaching
# relu with grad on, a size-1 vector times a matrix) that a small program spends fewer draws
# on. A census of fresh programs through thunder (8 min on one core each, requires_grad_() and
# creations with requires_grad=True left out as a night saturates them): full size only, 2,143
# programs, 20 issues met; small only, 3,419 programs, 22 issues, and more programs for each
# of the rare ones (slice-backward-pads-size-zero-dim 3 against 1, no-grad-view-requires-grad-
# dropped 8 against 0, int-unary-then-double-scalar-with-grad-promotes-to-double 2 against 0),
# fewer for those that need nesting (backward-fails-after-grad-mode-changes 10 against 47).
# Half the examples are small; "small" comes first, so shrinking tries it early.
SCOPES = ("small", "full")


@st.composite
def examples(draw, regions=REGION_KINDS, statements=STATEMENT_KINDS, modules=True, max_calls=6, max_depth=3,
             max_statements=4, device=None, small=True):
    # small=False draws every example full-size, with no scope draw: the fuzz tests' fake
    # nights (tests/test_fuzz.py), whose scenarios were chosen under those draws.
    if small and draw(st.sampled_from(SCOPES), label="scope") == "small":
        max_depth, max_statements, max_calls = min(max_depth, 1), min(max_statements, 3), min(max_calls, 3)
    program = draw(programs(regions, statements, modules, max_depth=max_depth, max_statements=max_statements,
                            device=device), label="program")
    schedule = draw(schedules(len(program.inputs), max_calls), label="schedule")
    return program, schedule


def split_failures(exc: BaseException) -> list[ConformanceMismatch]:
    """The mismatches inside what Hypothesis raised; re-raise anything else (harness bugs)."""
    if isinstance(exc, BaseExceptionGroup):
        found = []
        for sub in exc.exceptions:
            found += split_failures(sub)
        return found
    if isinstance(exc, ConformanceMismatch) and hasattr(exc, "result"):
        return [exc]
    raise exc


def finding_of(failure: ConformanceMismatch | Result, backend_name: str, issues) -> Finding:
    """A failure Hypothesis raised (it carries its Result), or a Result with mismatches."""
    result: Result = failure if isinstance(failure, Result) else failure.result
    sig = signature(result.mismatches[0], result.program, result.schedule)
    return Finding(sig, result, KI.classify(sig, backend_name, issues, result.program))


def focus(result: Result, masked: Callable[[str], bool]) -> Result | None:
    """The result led by its first mismatch whose class is not `masked` (the others keep
    their order after it), or None when every class is masked.

    The first mismatch names an example's bug, and a known bug that shows up often (thunder's
    grad-mode markers after a nested region) comes first in many examples that show another
    bug after it. Once the first bug is reported, the fuzzer looks at the next one."""
    for i, m in enumerate(result.mismatches):
        if not masked(class_key(m)):
            return result if i == 0 else replace(result, mismatches=[m, *result.mismatches[:i],
                                                                     *result.mismatches[i + 1:]])
    return None


# A repro body a compiler engineer reads in a minute; past this, shrinking gets another pass.
MAX_STATEMENTS = 6

# No explain phase. With it, Hypothesis runs every example after the first failure under
# sys.settrace (to say which lines ran), and thunder's interpreter is pure Python: each
# shrink candidate then compiles 5-10x slower (a 30 s shrink took 9 s without it). It
# would also re-run the minimal example for a printout the reports do not use.
PHASES = (Phase.explicit, Phase.reuse, Phase.generate, Phase.target, Phase.shrink)


def seeded(test, seed: int | None):
    """`test` with a fixed random seed, keeping its example database.

    `hypothesis.seed` (and derandomize) also switch the database off, so a seeded run
    would save none of its failures: the second shrink pass would replay nothing, and a
    seeded fuzzing night would leave nothing for the next one. Hypothesis reads the seed
    from this attribute (hypothesis 6.1xx, pinned in constraints.txt).
    """
    if seed is not None:
        test._hypothesis_internal_use_seed = seed
    return test


def check_area(backend, name: str, strategy, issues=None, on_finding=None,
               shrink: Budget | float = DEFAULT_SHRINK_SECONDS, seed: int | None = None) -> list[Finding]:
    """Fuzz one area; return the findings, known and new. `on_finding` sees each one.

    `shrink` is the budget per class of mismatch (seconds, or a shrinking.Budget).
    Failures are kept in an in-memory example database; if a shrunk program still has
    more than MAX_STATEMENTS statements (the shrink budget ran out), a second pass
    replays them and resumes shrinking, as Hypothesis does on a rerun.
    """
    issues = KI.load() if issues is None else issues
    run = Memo(run_example)
    db = InMemoryExampleDatabase()
    small_enough: set[str] = set()  # classes whose shrunk program is already a readable repro

    def prop(example):
        program, schedule = example
        for c in sorted(constructs(program)):
            event(c)
        result = run(program, backend, schedule)
        note(failure_message(result) if result.mismatches else "")
        if result.mismatches and class_key(result.mismatches[0]) in small_enough:
            # The whole example passes, not only that mismatch: another mismatch of the same
            # example is most often a second symptom of the same bug, and raising it would
            # report it as a class of its own.
            return
        raise_for(result)

    prop._hypothesis_internal_add_digest = f"{name}:{backend.name}".encode()

    def attempt(phases=PHASES) -> list[Finding]:
        test = seeded(settings(database=db, phases=phases)(given(strategy)(prop)), seed)
        try:
            with shrink_budget(shrink):
                test()
        except BaseException as exc:  # noqa: BLE001 - split_failures re-raises what is not ours
            return [finding_of(f, backend.name, issues) for f in split_failures(exc)]
        return []

    findings = attempt()
    if any(count_statements(f.result.program) > MAX_STATEMENTS for f in findings):
        # Resume shrinking from the database, for the classes still too long only: examples
        # of the others pass this time, so Hypothesis spends no budget re-confirming them.
        small_enough.update(_key(f) for f in findings if count_statements(f.result.program) <= MAX_STATEMENTS)
        best = {_key(f): f for f in findings}
        for f in attempt((Phase.reuse, Phase.shrink)):
            old = best.get(_key(f))
            if old is None or count_statements(f.result.program) < count_statements(old.result.program):
                best[_key(f)] = f
        findings = list(best.values())
    findings = [reduce_finding(f, backend, issues, run, shrink) for f in findings]
    for f in findings:
        if on_finding is not None:
            on_finding(f)
    return findings


def reduce_finding(finding: Finding, backend, issues, run=run_example, budget: Budget | float = DEFAULT_SHRINK_SECONDS,
                   masked: Callable[[str], bool] = lambda key: False, issue: KI.KnownIssue | None = None) -> Finding:
    """The finding after the last shrink pass (reduction.reduce), on the same class of
    mismatch, with its signature and known issue taken from the reduced program.
    `run(program, backend, schedule)` runs a candidate (a Memo in a property run).
    A finding led by a mismatch that came after `masked` ones (see `focus`) keeps being led
    by it; where the masked ones are gone from the reduced program, it is the first one.
    With `issue`, each smaller program must also stay a hit of that known issue, or one that
    may shrink to it (KI.may_shrink_to): one class of mismatch can be several bugs, and the
    fuzzer looks for the one the program showed or may show with fewer constructs."""
    budget = budget if isinstance(budget, Budget) else Budget(seconds=budget)
    key = _key(finding)

    def still_fails(program, schedule):
        result = run(program, backend, schedule)
        if result is None or not result.mismatches:
            return None
        result = focus(result, lambda k: k != key and masked(k))
        if result is None or class_key(result.mismatches[0]) != key:
            return None
        if issue is not None:
            sig = signature(result.mismatches[0], program, schedule)
            known = KI.classify(sig, backend.name, issues, program)
            if (known is None or known.id != issue.id) and not KI.may_shrink_to(sig, issue, program):
                return None
        return result

    r = reduce(finding.result.program, finding.result.schedule, still_fails, max_tries=budget.calls,
               seconds=budget.seconds, result=finding.result)
    if (r.program, r.schedule) == (finding.result.program, finding.result.schedule):
        return finding
    sig = signature(r.result.mismatches[0], r.program, r.schedule)
    return Finding(sig, r.result, KI.classify(sig, backend.name, issues, r.program))


def _key(f: Finding) -> str:
    return class_key(f.result.mismatches[0])


def new_findings_message(findings: list[Finding]) -> str:
    new = [f for f in findings if f.known is None]
    parts = [f"{len(new)} new grad-mode discrepancy(ies); minimal programs below. If one is a real "
             "backend bug, record it: `python -m conformance triage reports/conformance` prints its "
             "known_issues.toml entry (see README, 'Known issues')."]
    for f in new:
        parts += ["", f"signature: {f.signature}", failure_message(f.result)]
    return "\n".join(parts)


class KnownDiscrepancy(UserWarning):
    """A known issue of the backend was hit: reported, not failed."""


def assert_no_new(findings: list[Finding], stacklevel: int = 2) -> None:
    """Warn for each known issue hit (at the caller `stacklevel` frames up), fail on new ones."""
    import warnings

    import pytest

    for f in findings:
        if f.known is not None:
            warnings.warn(KnownDiscrepancy(f"known issue {f.known.id}: {f.signature}"), stacklevel=stacklevel)
    if any(f.known is None for f in findings):
        pytest.fail(new_findings_message(findings), pytrace=False)
