"""The engine: run an example, search and shrink with Hypothesis, triage what it finds.

Every driver goes through here: the conformance suite (suite.check_area), the nightly job
(night.worker), bench and selfcheck. One example is run by check.run_example (eager and the
backend, then the oracles); `search` is one Hypothesis run over a strategy of examples, which
shrinks each class of mismatch within a budget; `reduce_finding` is the last shrink pass; a
Finding is a shrunk failure with its signature and the known issue it is (or None).
"""

from __future__ import annotations

import unittest
from dataclasses import dataclass, replace
from typing import Callable

from hypothesis import Phase, given
from hypothesis import strategies as st
from hypothesis.errors import Unsatisfiable

from conformance import known_issues as KI
from conformance.check import Result, raise_for, run_example
from conformance.generators import STATEMENT_KINDS, programs, schedules
from conformance.ops import FAMILIES
from conformance.oracles.mismatch import BugClass, ConformanceMismatch, Mismatch, class_key
from conformance.program import REGION_KINDS
from conformance.reduction import reduce
from conformance.report.signatures import Signature, signature
from conformance.shrinking import DEFAULT_SHRINK_SECONDS, Budget, shrink_budget


@dataclass
class Finding:
    signature: Signature
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
             max_statements=4, device=None, small=True, families=tuple(FAMILIES)):
    # small=False draws every example full-size, with no scope draw (`fuzz --no-small-examples`).
    if small and draw(st.sampled_from(SCOPES), label="scope") == "small":
        max_depth, max_statements, max_calls = min(max_depth, 1), min(max_statements, 3), min(max_calls, 3)
    program = draw(programs(regions, statements, modules, max_depth=max_depth, max_statements=max_statements,
                            device=device, families=families), label="program")
    schedule = draw(schedules(len(program.inputs), max_calls, program.is_module), label="schedule")
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
    return Finding(sig, result, KI.classify(sig, backend_name, issues, result.program, context_of(result)))


def context_of(result: Result, m: Mismatch | None = None) -> KI.Context:
    """The call of the mismatch (by default the first): its ambient mode, whether eager
    raised in it, and whether in eager another computed output of it requires grad."""
    m = m or result.mismatches[0]
    calls = result.eager.calls
    if m.call is None or m.call >= len(calls):
        return KI.Context(m.ambient)
    call = calls[m.call]
    others = [leaf for k, leaf in enumerate(call.outputs) if k != m.returned]
    connected = any(leaf.kind == "tensor" and leaf.requires_grad and not leaf.is_input for leaf in others)
    return KI.Context(m.ambient, call.error is not None, connected, call.spec.autocast)


def focus(result: Result, masked: Callable[[BugClass], bool]) -> Result | None:
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


def search(strategy, check: Callable, settings, budget: Budget | float, seed: int | None = None,
           digest: str = "") -> list[ConformanceMismatch]:
    """One Hypothesis run over `strategy`'s (program, schedule) examples.

    `check(program, schedule)` runs an example and returns the Result to fail on (led by the
    mismatch that names the failure's class), or None to let it pass. Hypothesis shrinks each
    class within `budget`; the failures come back, each carrying its shrunk Result. Anything
    raised that is not a mismatch is a harness bug and propagates."""

    def prop(example):
        result = check(*example)
        if result is not None:
            raise_for(result)

    # Hypothesis keys its database by the test's source: one key per driver and backend.
    prop._hypothesis_internal_add_digest = digest.encode()
    test = seeded(settings(given(strategy)(prop)), seed)
    try:
        with shrink_budget(budget):
            test()
    except (unittest.SkipTest, Unsatisfiable):
        return []  # nothing ran: every draw was rejected, or a replay found its entries gone
    except BaseException as exc:  # noqa: BLE001 - split_failures re-raises harness bugs
        return split_failures(exc)
    return []


def reduce_finding(finding: Finding, backend, issues, run=run_example, budget: Budget | float = DEFAULT_SHRINK_SECONDS,
                   masked: Callable[[BugClass], bool] = lambda key: False) -> Finding:
    """The finding after the last shrink pass (reduction.reduce), on the same class of
    mismatch, with its signature and known issue taken from the reduced program.
    `run(program, backend, schedule)` runs a candidate (a Memo in a property run).
    A finding led by a mismatch that came after `masked` ones (see `focus`) keeps being led
    by it; where the masked ones are gone from the reduced program, it is the first one."""
    budget = budget if isinstance(budget, Budget) else Budget(seconds=budget)
    key = class_of(finding)

    def still_fails(program, schedule):
        result = run(program, backend, schedule)
        if result is None or not result.mismatches:
            return None
        result = focus(result, lambda k: k != key and masked(k))
        if result is None or class_key(result.mismatches[0]) != key:
            return None
        return result

    r = reduce(finding.result.program, finding.result.schedule, still_fails, max_tries=budget.calls,
               seconds=budget.seconds, result=finding.result)
    if (r.program, r.schedule) == (finding.result.program, finding.result.schedule):
        return finding
    return finding_of(r.result, backend.name, issues)


def class_of(f: Finding) -> BugClass:
    """The class of the mismatch that leads the finding: what it was shrunk as."""
    return class_key(f.result.mismatches[0])


