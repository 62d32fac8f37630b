"""Every known issue still reproduces on the backend under test. One that no longer does
is reported as fixed (the test fails, asking to remove it), never silently kept."""

import pytest

from conformance import known_issues
from conformance.check import run_example
from conformance.engine import context_of
from conformance.night.crash import known_issue_of, run_apart
from conformance.report.signatures import signature

ISSUES = known_issues.load()


@pytest.mark.parametrize("issue", ISSUES, ids=[i.id for i in ISSUES])
def test_known_issue_still_reproduces(backend, issue, pytestconfig):
    if not issue.applies_to(backend.name):
        pytest.skip(f"{issue.id} is a known issue of {', '.join(issue.backends)}, not of {backend.name}")
    if not issue.holds_on(backend.versions()):
        fixed = ", ".join(f"{p} {v}" for p, v in issue.fixed_in)
        pytest.skip(f"{issue.id} was fixed in {fixed}; the backend has {backend.versions()}")
    if issue.breaks_its_process:
        failure = run_apart(issue.program, issue.schedule, pytestconfig.getoption("--backend"))
        assert failure and known_issue_of(failure, issue.program, backend.name, [issue]), (
            f"known issue {issue.id!r} no longer reproduces on {backend.name}: run in a process of its own, "
            f"it {'broke it: ' + failure.signature if failure else 'came through'}. It may be fixed: "
            "remove it from conformance/known_issues.toml.")
        return
    result = run_example(issue.program, backend, issue.schedule)
    sigs = [signature(m, issue.program, issue.schedule) for m in result.mismatches]
    hit = [s for s, m in zip(sigs, result.mismatches)
           if known_issues.classify(s, backend.name, [issue], issue.program, context_of(result, m))]
    assert hit, (
        f"known issue {issue.id!r} no longer reproduces on {backend.name}: it may be fixed. "
        f"Remove it from conformance/known_issues.toml. Signatures now: {sigs or 'none'}"
    )
