"""Every program of the sweep (generators.sweep): each op of the catalogue on small shapes
(0-d, empty, size 1, batched) and on non-finite values, and the promotion and view-update
motifs; every float input requiring grad, one call under grad; and the night's probes
(generators.probes: each grad-mode construct alone, called under grad, no_grad and grad, and
each op's grad-mode boundary). No shrinking: each program has one to four statements already.
One test per part, so that workers share them."""

import pytest

from conformance import known_issues
from conformance.check import run_example
from conformance.generators.probes import probe_examples
from conformance.generators.schedules import SINGLE_CALL
from conformance.generators.sweep import SWEEPS

PARTS = {"probes": probe_examples, **{name: lambda part=part: [(p, SINGLE_CALL) for p in part()]
                                      for name, part in SWEEPS.items()}}
from conformance.suite import assert_no_new, finding_of


@pytest.mark.parametrize("part", sorted(PARTS))
def test_every_swept_program(backend, record_finding, part):
    issues = known_issues.holding(known_issues.load(), backend)
    findings = {}
    for program, schedule in PARTS[part]():
        result = run_example(program, backend, schedule)
        if result.mismatches:
            finding = finding_of(result, backend.name, issues)
            # One per signature and issue: one symptom can be two bugs (ops of one signature)
            findings.setdefault((finding.signature, finding.known and finding.known.id), finding)
    for finding in findings.values():
        record_finding(finding)
    assert_no_new(list(findings.values()))
