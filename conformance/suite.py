"""The property runner behind every area test of the conformance suite.

`check_area` runs Hypothesis over (program, schedule) examples against a backend. Each
mismatch makes the example fail; Hypothesis shrinks it, one class per kind of mismatch;
the shrunk failures are then sorted into known issues (recorded, suite stays green) and
new ones (recorded, and the test fails loudly with the minimal program). Exceptions that
are not mismatches are harness bugs and propagate untouched.
"""

from __future__ import annotations

from hypothesis import Phase, event, note, settings
from hypothesis.database import InMemoryExampleDatabase

from conformance import known_issues as KI
from conformance.check import failure_message, run_example
# The engine's names, importable from here as before.
from conformance.engine import (MAX_STATEMENTS, PHASES, SCOPES, Finding, examples, finding_of,  # noqa: F401
                                class_of, focus, reduce_finding, search, seeded, split_failures)
from conformance.oracles.mismatch import class_key
from conformance.generators.schedules import caller_constructs
from conformance.program import constructs, count_statements
from conformance.shrinking import DEFAULT_SHRINK_SECONDS, Budget, Memo


def check_area(backend, name: str, strategy, issues=None, on_finding=None,
               shrink: Budget | float = DEFAULT_SHRINK_SECONDS, seed: int | None = None) -> list[Finding]:
    """Fuzz one area; return the findings, known and new. `on_finding` sees each one.

    `shrink` is the budget per class of mismatch (seconds, or a shrinking.Budget).
    Failures are kept in an in-memory example database; if a shrunk program still has
    more than MAX_STATEMENTS statements (the shrink budget ran out), a second pass
    replays them and resumes shrinking, as Hypothesis does on a rerun.
    """
    issues = KI.holding(KI.load(), backend) if issues is None else issues
    run = Memo(run_example)
    db = InMemoryExampleDatabase()
    small_enough: set[str] = set()  # classes whose shrunk program is already a readable repro

    def check(program, schedule):
        for c in sorted(constructs(program) | caller_constructs(schedule, program.is_module)):
            event(c)
        result = run(program, backend, schedule)
        note(failure_message(result) if result.mismatches else "")
        if not result.mismatches or class_key(result.mismatches[0]) in small_enough:
            # The whole example passes, not only that mismatch: another mismatch of the same
            # example is most often a second symptom of the same bug, and raising it would
            # report it as a class of its own.
            return None
        return result

    def attempt(phases=PHASES) -> list[Finding]:
        failures = search(strategy, check, settings(database=db, phases=phases), shrink, seed,
                          digest=f"{name}:{backend.name}")
        return [finding_of(f, backend.name, issues) for f in failures]

    findings = attempt()
    if any(count_statements(f.result.program) > MAX_STATEMENTS for f in findings):
        # Resume shrinking from the database, for the classes still too long only: examples
        # of the others pass this time, so Hypothesis spends no budget re-confirming them.
        small_enough.update(class_of(f) for f in findings if count_statements(f.result.program) <= MAX_STATEMENTS)
        best = {class_of(f): f for f in findings}
        for f in attempt((Phase.reuse, Phase.shrink)):
            old = best.get(class_of(f))
            if old is None or count_statements(f.result.program) < count_statements(old.result.program):
                best[class_of(f)] = f
        findings = list(best.values())
    findings = [reduce_finding(f, backend, issues, run, shrink) for f in findings]
    for f in findings:
        if on_finding is not None:
            on_finding(f)
    return findings


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
