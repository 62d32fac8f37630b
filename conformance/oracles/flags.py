"""Flags oracle: the autograd flags a user can read on outputs and inputs:
`requires_grad`, `grad_fn is None`, and `is_inference()`."""

from __future__ import annotations

from conformance.oracles.exceptions import comparable_calls
from conformance.oracles.mismatch import Mismatch
from conformance.outcome import Leaf, SideOutcome

FLAGS = (("requires_grad", "requires_grad"), ("has_grad_fn", "grad_fn"), ("is_inference", "is_inference"))


def check(eager: SideOutcome, backend: SideOutcome) -> list[Mismatch]:
    out = []
    for i, e, b in comparable_calls(eager, backend):
        pairs = list(zip((f"return[{k}]" for k in range(len(e.outputs))), e.outputs, b.outputs))
        pairs += [(f"{n} after call", e.after[n], b.after[n]) for n in e.after
                  if n in b.after and not n.startswith("return[")]
        for where, el, bl in pairs:
            if el.kind != "tensor" or bl.kind != "tensor":
                continue
            for attr, aspect in FLAGS:
                ev, bv = getattr(el, attr), getattr(bl, attr)
                if ev != bv:
                    if attr == "has_grad_fn":
                        ev, bv = _grad_fn_text(ev, el, bl), _grad_fn_text(bv, bl, el)
                    out.append(Mismatch("flags", aspect, where, str(ev), str(bv), i, e.spec.ambient))
    return out


def _grad_fn_text(v: bool | str, leaf: Leaf, other: Leaf) -> str:
    text = v if isinstance(v, str) else ("a grad_fn" if v else "grad_fn None")
    # Returning the input object itself (for an op that leaves it unchanged) is why a
    # grad_fn goes missing; said here, it is one signature whatever the program around it.
    return text + ", the input itself" if leaf.is_input and not other.is_input else text
