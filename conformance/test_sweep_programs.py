"""Every one-op program of the sweep (generators.sweep): each op of the catalogue on small
shapes (0-d, empty, size 1, batched) and on non-finite values, every float input requiring
grad, one call under grad. No shrinking: each program is already one statement."""

from conformance import known_issues
from conformance.check import run_example
from conformance.generators.sweep import single_op_examples
from conformance.suite import assert_no_new, finding_of


def test_every_one_op_program(backend, record_finding):
    issues = known_issues.load()
    findings = {}
    for program, schedule in single_op_examples():
        result = run_example(program, backend, schedule)
        if result.mismatches:
            finding = finding_of(result, backend.name, issues)
            # One per signature and issue: one symptom can be two bugs (ops of one signature)
            findings.setdefault((finding.signature, finding.known and finding.known.id), finding)
    for finding in findings.values():
        record_finding(finding)
    assert_no_new(list(findings.values()))
