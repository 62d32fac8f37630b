"""Grad-mode oracle: the ambient grad mode and inference mode after each call equal
eager's, also when the program leaves grad disabled on return or raises in a region
(both sides raising). A call that raised on one side only is the exceptions oracle's."""

from __future__ import annotations

from conformance.oracles.mismatch import Mismatch
from conformance.outcome import SideOutcome


def check(eager: SideOutcome, backend: SideOutcome) -> list[Mismatch]:
    out = []
    for i, (e, b) in enumerate(zip(eager.calls, backend.calls)):
        if e.state_after is None or b.state_after is None:
            continue
        if _raised(e) != _raised(b):  # the exceptions oracle reports it; grad mode is its consequence
            continue
        if e.state_after.grad_enabled != b.state_after.grad_enabled:
            out.append(Mismatch("grad_mode", "grad enabled after call", "torch.is_grad_enabled()",
                                str(e.state_after.grad_enabled), str(b.state_after.grad_enabled), i, e.spec.ambient))
        if e.state_after.inference_mode != b.state_after.inference_mode:
            out.append(Mismatch("grad_mode", "inference mode after call", "torch.is_inference_mode_enabled()",
                                str(e.state_after.inference_mode), str(b.state_after.inference_mode),
                                i, e.spec.ambient))
    return out


def _raised(c) -> bool:
    return c.error is not None and c.error.stage == "call"
