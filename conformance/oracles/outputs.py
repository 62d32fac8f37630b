"""Outputs oracle: returned values (structure, Python values, shape, dtype, device,
values) and the inputs and parameters after the call (in-place updates)."""

from __future__ import annotations

from conformance.oracles.exceptions import comparable_calls
from conformance.oracles.mismatch import Mismatch
from conformance.oracles.values import close, describe
from conformance.outcome import Leaf, SideOutcome


def compare_leaf(where: str, e: Leaf, b: Leaf, call: int, ambient: str, aspect_prefix: str = "") -> list[Mismatch]:
    def mm(aspect, ev, bv):
        return [Mismatch("outputs", aspect_prefix + aspect, where, ev, bv, call, ambient)]

    if e.kind != b.kind:
        return mm("type", describe(e), describe(b))
    if e.kind == "python":
        return [] if e.value == b.value else mm("python value", repr(e.value), repr(b.value))
    for aspect in ("shape", "dtype", "device"):
        if getattr(e, aspect) != getattr(b, aspect):
            return mm(aspect, str(getattr(e, aspect)), str(getattr(b, aspect)))
    diff = close(b.value, e.value)
    return [] if diff is None else mm("value", describe(e), f"{describe(b)} ({diff})")


def check(eager: SideOutcome, backend: SideOutcome) -> list[Mismatch]:
    out = []
    for i, e, b in comparable_calls(eager, backend):
        amb = e.spec.ambient
        if len(e.outputs) != len(b.outputs):
            out.append(Mismatch("outputs", "structure", "returns", f"{len(e.outputs)} values",
                                f"{len(b.outputs)} values", i, amb))
            continue
        for k, (eo, bo) in enumerate(zip(e.outputs, b.outputs)):
            out += compare_leaf(f"return[{k}]", eo, bo, i, amb)
        for name, ea in e.after.items():
            ba = b.after.get(name)
            if ba is not None and not name.startswith("return["):
                out += compare_leaf(f"{name} after call", ea, ba, i, amb, "input ")
    return out
