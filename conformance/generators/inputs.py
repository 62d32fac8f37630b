"""Strategies for tensor inputs and module parameters: shapes, dtypes, devices, flags."""

from __future__ import annotations

import functools
from dataclasses import replace

import torch
from hypothesis import strategies as st

from conformance.program import DTYPES, FLOAT_DTYPES, TensorInput


@functools.cache
def devices() -> st.SearchStrategy[str]:
    # CUDA is drawn only where it exists; the suite's CUDA tests skip, with a reason, elsewhere.
    return st.sampled_from(("cpu", "cuda") if torch.cuda.is_available() else ("cpu",))


@functools.cache
def sizes() -> st.SearchStrategy[int]:
    # 1 is the simplest size; 0 (an empty dim) is drawn on purpose but shrinks away.
    return st.one_of(st.integers(1, 3), st.just(0))


@functools.cache
def shapes(max_dims: int = 3) -> st.SearchStrategy[tuple[int, ...]]:
    return st.lists(sizes(), min_size=0, max_size=max_dims).map(tuple)


# How a tensor relates to one drawn before it in the same program. Programs compute on related
# tensors: a weight and the input it multiplies, a bias and the output it is added to. Drawn
# independently, two tensors rarely fit a matmul (same dtype, inner sizes equal): in a census of
# 3,000 programs, 1.8% had one (the op fell back to `x * 2` for want of a pair), and none
# multiplied a 3-d tensor by a 2-d one, the broadcasting case of torch.matmul. "fresh" comes
# first, so it is what shrinks.
RELATIONS = ("fresh", "same", "broadcast", "matmul")
# Whose dtype a related tensor has (not a matmul operand's: that is always its base's); the
# base's shrinks first.
RELATED_DTYPES = ("base", "own")


@st.composite
def related_shapes(draw, how: str, base: tuple[int, ...], label: str) -> tuple[int, ...]:
    """A shape that fits `base`: the same, a suffix of it (the two broadcast together), or the
    right operand of a matmul with it (`base @ x` is defined)."""
    if how == "same":
        return base
    if how == "broadcast":
        return base[draw(st.integers(0, len(base)), label=f"{label}.suffix"):]
    if not base:  # a 0-d tensor is no matmul operand
        return draw(shapes(), label=label)
    rank = draw(st.integers(1, 3), label=f"{label}.matmul_rank")
    if rank == 1:
        return (base[-1],)
    outer = draw(sizes(), label=f"{label}.matmul_outer")
    batch = () if rank == 2 else (base[0] if len(base) == 3 else draw(sizes(), label=f"{label}.matmul_batch"),)
    return (*batch, base[-1], outer)


@st.composite
def tensor_inputs(draw, name: str, device: str | None = None, float_only: bool = False,
                  earlier: tuple[TensorInput, ...] = ()) -> TensorInput:
    """A tensor input, fresh or related to one of the program's `earlier` tensors."""
    dtypes = FLOAT_DTYPES if float_only else DTYPES
    how = draw(st.sampled_from(RELATIONS), label=f"{name}.relation") if earlier else "fresh"
    base = None if how == "fresh" else draw(st.sampled_from(earlier), label=f"{name}.base")
    # A related tensor has its base's device, and its dtype: always for a matmul operand
    # (torch.matmul does not promote), half the time for one that broadcasts with it or has its
    # shape. The other half is a mixed pair that fits, as a float64 0-d scale of a bool mask or
    # a float32 bias of a float16 activation: type promotion between a dimensioned tensor and a
    # 0-d one is a rule of its own (int-unary-then-double-scalar-with-grad-promotes-to-double).
    if base is not None and base.dtype in dtypes and (
            how == "matmul" or draw(st.sampled_from(RELATED_DTYPES), label=f"{name}.dtype_of") == "base"):
        dtype = base.dtype
    else:
        dtype = draw(st.sampled_from(dtypes), label=f"{name}.dtype")
    shape = draw(shapes(), label=f"{name}.shape") if base is None else draw(
        related_shapes(how, base.shape, f"{name}.shape"))
    requires_grad = dtype in FLOAT_DTYPES and draw(st.booleans(), label=f"{name}.requires_grad")
    return TensorInput(
        name=name,
        shape=shape,
        dtype=dtype,
        device=device or (base.device if base is not None else draw(devices(), label=f"{name}.device")),
        requires_grad=requires_grad,
        special=draw(specials(), label=f"{name}.special") if dtype in FLOAT_DTYPES else "",
    )


@functools.cache
def specials() -> st.SearchStrategy[str]:
    """A non-finite element for one float tensor in eight: "" (none), "nan", "inf" or "-inf".

    A backend decomposes an op into others that agree with it on finite values and may not on
    the rest: thunder's autograd path computes `torch.relu(x)` as `torch.where(x > 0, x, 0.0)`,
    0 for a NaN where eager gives NaN (relu-of-nan-is-zero-with-grad). With normal values only,
    a NaN came from the mean of an empty tensor: in a census of 6,000 programs (seeds 1-2), 1
    applied relu to one; with this draw, 4 applied it to a NaN input or a value computed from
    one. One in eight, not more: a NaN spreads through what reads it, and a value bug compared
    as NaN on both sides does not show. "" comes first, so it is what shrinks."""
    return st.integers(0, 7).flatmap(lambda n: st.sampled_from(SPECIALS) if n == 7 else st.just(""))


SPECIALS = ("nan", "inf", "-inf")


def parameters(name: str, device: str, earlier: tuple[TensorInput, ...] = ()) -> st.SearchStrategy[TensorInput]:
    # nn.Parameter requires grad by default, and only floating tensors can.
    return tensor_inputs(name, device=device, float_only=True, earlier=earlier).map(
        lambda t: replace(t, requires_grad=True)
    )
