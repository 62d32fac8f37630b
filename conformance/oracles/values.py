"""Shared comparison of observed leaves: dtype-aware closeness, and short human text."""

from __future__ import annotations

import torch

from conformance.outcome import Leaf

# thunder (like other fusers) may compute a chain of reduced-precision ops in float32 and
# round once, where eager rounds after every op; each rounding costs up to one ulp, so the
# low-precision tolerances of assert_close are widened by the depth of a typical chain.
_LOW_PRECISION = {torch.float16: (1e-2, 1e-3), torch.bfloat16: (8e-2, 1e-2)}


def describe(leaf: Leaf | None) -> str:
    if leaf is None:
        return "None"
    if leaf.kind == "python":
        return repr(leaf.value)
    t = leaf.value
    body = _short(t)
    return f"tensor({body}, shape={list(leaf.shape)}, dtype={leaf.dtype})"


def _short(t: torch.Tensor) -> str:
    flat = t.reshape(-1)
    items = flat[:6].tolist()
    text = ", ".join(f"{v:.4g}" if isinstance(v, float) else str(v) for v in items)
    return f"[{text}{', ...' if flat.numel() > 6 else ''}]"


def close(actual: torch.Tensor, expected: torch.Tensor) -> str | None:
    """None when close (NaN equals NaN), else a one-line description of the difference."""
    if actual.shape != expected.shape:
        return f"shape {list(actual.shape)} vs {list(expected.shape)}"
    rtol, atol = _LOW_PRECISION.get(expected.dtype, (None, None))
    try:
        torch.testing.assert_close(
            actual, expected, rtol=rtol, atol=atol, equal_nan=True, check_dtype=False, check_device=False
        )
    except AssertionError as exc:
        lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
        return "; ".join(lines[:3])
    return None
