"""Traces oracle (white-box, thunder): the four parts of grad-mode support, each on its own.

1. markers: the first trace has one marker per torch._C._set_grad_enabled call that eager
   makes for the same program, with the same arguments, in the same order (not compared
   where a torch.autograd.Function's forward makes calls: thunder traces it on its own);
2. markers removed: the final execution trace has none left;
3. tagging: every tensor a symbol makes while grad is off carries DETACHED_AUTOGRAD_GRAPH;
4. VJP: when eager records nothing to differentiate (no grad anywhere), the backward trace
   returns no gradient.
(Part 4, the cache check, is the recompiles oracle.) Violations are reported as their own
oracle, apart from user-visible mismatches: they may be harmless, or explain one.
"""

from __future__ import annotations

from conformance.grad_mode import AMBIENT_GRAD_ENABLED
from conformance.oracles.mismatch import Mismatch
from conformance.outcome import SideOutcome


def check(eager: SideOutcome, backend: SideOutcome) -> list[Mismatch]:
    out = []
    if eager.setup_error or backend.setup_error:
        return out
    for i, (e, b) in enumerate(zip(eager.calls, backend.calls)):
        facts = b.traces
        if facts is None or e.error or b.error:
            continue
        amb = e.spec.ambient

        def mm(aspect, where, ev, bv):
            out.append(Mismatch("traces", aspect, where, ev, bv, i, amb))

        if e.set_grad_calls is not None and facts.markers_first != e.set_grad_calls:
            mm("markers", "first trace", f"_set_grad_enabled calls {list(e.set_grad_calls)}",
               f"markers {list(facts.markers_first)}")
        if facts.markers_execution:
            mm("marker left in execution trace", "execution trace", "0 markers", f"{facts.markers_execution}")
        enabled = AMBIENT_GRAD_ENABLED[amb]
        # Where eager's grad-mode calls were not recorded (a torch.autograd.Function's forward
        # changes the mode: thunder traces it on its own, without markers in this trace), the
        # markers here do not tell the mode each symbol ran in.
        for kind, data in facts.events if e.set_grad_calls is not None else ():
            if kind == "marker":
                enabled = data
            elif not enabled:
                untagged = [name for name, tagged in data if not tagged]
                if untagged:
                    mm("untagged under no_grad", "first trace", "tagged DETACHED_AUTOGRAD_GRAPH",
                       f"{', '.join(untagged)} untagged")
                    break
        nothing_to_differentiate = all(g is None for g in e.grads.values()) and not any(
            o.kind == "tensor" and o.has_grad_fn for o in e.outputs)
        if nothing_to_differentiate and facts.backward_outputs:
            mm("backward computes detached values", "backward trace", "no gradient",
               f"{facts.backward_outputs} gradients returned")
    return out
