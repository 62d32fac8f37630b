"""Recompiles oracle: the backend's cache counters against a model of a correct cache.

Too many compilations (a cache that misses what it should hit) and too few (a call that
reused a computation compiled for another ambient grad mode) are separate aspects.
"""

from __future__ import annotations

from conformance.oracles.mismatch import Mismatch
from conformance.outcome import SideOutcome

POLICIES = ("per key", "every call")


def expected_compilations(policy: str, keys: list) -> int:
    """How many compilations a correct cache makes for calls with these cache keys, in order.

    A key is what the call's semantics depend on: the ambient `torch.is_grad_enabled()`,
    per input, shape, dtype, device and requires_grad, and whether the caller is in autocast.
    - "per key": one compilation per distinct key seen (thunder's "constant values" and
      "symbolic values" options; our inputs never vary in shape, so both are the same).
    - "every call": a compilation per call (thunder's "no caching").
    """
    if policy == "per key":
        return len(set(keys))
    if policy == "every call":
        return len(keys)
    raise ValueError(f"unknown recompile policy {policy!r}; expected one of {POLICIES}")


def compilation_range(policy: str, keys: list) -> tuple[int, int]:
    """The fewest and the most compilations a correct cache makes. A key's last part is a
    module's training flag (`model.eval()`): a cache may check it or not, as a forward that
    does not read `self.training` computes the same either way (thunder checks it only where
    the forward reads the module); where the forward reads it, the outputs show a cache that
    ignores it."""
    most = expected_compilations(policy, keys)
    return (expected_compilations(policy, [k[:-1] for k in keys]), most) if policy == "per key" else (most, most)


def applicable(backend: SideOutcome) -> bool:
    return backend.cache is not None and backend.recompile_policy is not None


def check(eager: SideOutcome, backend: SideOutcome) -> list[Mismatch]:
    """Not applicable (no mismatch, and `applicable` says so) for backends without counters,
    and for examples where a call raised: a failed compilation counts differently."""
    if not applicable(backend) or backend.setup_error or eager.setup_error:
        return []
    if any(c.error for c in eager.calls) or any(c.error for c in backend.calls):
        return []
    fewest, expected = compilation_range(backend.recompile_policy, [c.cache_key for c in backend.calls])
    actual = backend.cache.misses
    if fewest <= actual <= expected:
        return []
    expected = fewest if actual < fewest else expected
    aspect = "too many compilations" if actual > expected else "too few compilations"
    modes = " -> ".join(c.spec.ambient for c in backend.calls)
    return [Mismatch("recompiles", aspect, f"cache misses over calls [{modes}]",
                     f"{expected} (model of a correct cache)", str(actual))]
