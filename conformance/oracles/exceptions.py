"""Exceptions oracle: a call (or its backward) raises on one side and not on the other.

When both sides raise, they agree: messages and types differ legitimately between eager
and any compiler; except that an AssertionError from the backend where eager raised a
user-facing error is the compiler's own invariant failing, which hides the error the user
should see (thunder 0.2.6 replaces any error raised inside a no_grad region this way).
A program on which eager itself raises is not a mismatch by itself. A backend that declares
BACKWARD_ERRORS_AT_CALL may raise at the call what eager raises in that call's backward.
"""

from __future__ import annotations

from conformance.backends.base import Declaration
from conformance.oracles.mismatch import Mismatch
from conformance.outcome import SideOutcome


def check(eager: SideOutcome, backend: SideOutcome) -> list[Mismatch]:
    out = _check_calls(eager, backend)
    if backend.introspection_error is not None:  # the harness asked, not the user: reported last
        err = backend.introspection_error
        out.append(Mismatch("exceptions", f"backend raised during {err.stage}", err.stage, "not asked",
                            err.line()))
    return out


def _check_calls(eager: SideOutcome, backend: SideOutcome) -> list[Mismatch]:
    if eager.setup_error or backend.setup_error:
        if bool(eager.setup_error) != bool(backend.setup_error):
            e, b = eager.setup_error, backend.setup_error
            return [Mismatch("exceptions", "backend raised" if b else "eager raised", "setup",
                             e.line() if e else "ran", b.line() if b else "ran")]
        return []
    out = []
    moved = Declaration.BACKWARD_ERRORS_AT_CALL in backend.declarations
    for i, (e, b) in enumerate(zip(eager.calls, backend.calls)):
        ee, be = e.error, b.error
        if ee is None and be is None:
            continue
        if moved and ee is not None and be is not None and (ee.stage, be.stage) == ("backward", "call"):
            continue
        if ee is None or be is None:
            stage = (be or ee).stage
            aspect = f"backend raised during {stage}" if be else f"eager raised during {stage}"
            out.append(Mismatch("exceptions", aspect, "call", ee.line() if ee else "no exception",
                                be.line() if be else "no exception", i, e.spec.ambient))
        elif ee.stage != be.stage:
            out.append(Mismatch("exceptions", "raised at another stage", "call", ee.line(), be.line(),
                                i, e.spec.ambient))
        elif be.type == "AssertionError" and ee.type != "AssertionError":
            out.append(Mismatch("exceptions", "backend raised an internal AssertionError", "call", ee.line(),
                                be.line(), i, e.spec.ambient))
    return out


def comparable_calls(eager: SideOutcome, backend: SideOutcome):
    """Pairs of calls the value oracles may compare: neither side raised during the call, and
    no earlier call of a module raised on one side only. A module carries state from call to
    call (the caller's step, buffers, gradients kept): after a call that raised on one side,
    the two start from different states, and what differs later follows from that error."""
    if eager.setup_error or backend.setup_error:
        return []
    module = any(name.startswith("self.") for c in eager.calls[:1] for name in c.after)
    pairs = []
    for i, (e, b) in enumerate(zip(eager.calls, backend.calls)):
        if not (e.error and e.error.stage == "call") and not (b.error and b.error.stage == "call"):
            pairs.append((i, e, b))
        if module and (e.error is None) != (b.error is None):
            break
    return pairs
