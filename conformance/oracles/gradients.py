"""Gradients oracle: after backward with a seeded cotangent, the `.grad` of every input,
parameter and returned leaf; a missing gradient (None) is not the same as zeros."""

from __future__ import annotations

from conformance.oracles.exceptions import comparable_calls
from conformance.oracles.mismatch import Mismatch
from conformance.oracles.values import close, describe
from conformance.outcome import SideOutcome


def check(eager: SideOutcome, backend: SideOutcome) -> list[Mismatch]:
    out = []
    for i, e, b in comparable_calls(eager, backend):
        if e.error or b.error:  # the exceptions oracle reports it; grads are then partial
            continue
        for name in e.grads:
            if name not in b.grads:
                continue
            eg, bg = e.grads[name], b.grads[name]
            where = f"{name}.grad"
            if eg is None and bg is None:
                continue
            if eg is None or bg is None:
                aspect = "spurious gradient" if eg is None else "missing gradient"
                out.append(Mismatch("gradients", aspect, where, describe(eg), describe(bg), i, e.spec.ambient))
                continue
            diff = close(bg.value, eg.value)
            if diff is not None:
                out.append(Mismatch("gradients", "value", where, describe(eg), f"{describe(bg)} ({diff})",
                                    i, e.spec.ambient))
    return out
