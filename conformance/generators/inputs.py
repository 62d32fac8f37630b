"""Strategies for tensor inputs and module parameters: shapes, dtypes, devices, flags."""

from __future__ import annotations

import torch
from hypothesis import strategies as st

from conformance.program import DTYPES, FLOAT_DTYPES, TensorInput


def devices() -> st.SearchStrategy[str]:
    # CUDA is drawn only where it exists; the suite's CUDA tests skip, with a reason, elsewhere.
    return st.sampled_from(("cpu", "cuda") if torch.cuda.is_available() else ("cpu",))


def shapes(max_dims: int = 3) -> st.SearchStrategy[tuple[int, ...]]:
    # 1 is the simplest size; 0 (an empty dim) is drawn on purpose but shrinks away.
    size = st.one_of(st.integers(1, 3), st.just(0))
    return st.lists(size, min_size=0, max_size=max_dims).map(tuple)


@st.composite
def tensor_inputs(draw, name: str, device: str | None = None, float_only: bool = False) -> TensorInput:
    dtype = draw(st.sampled_from(FLOAT_DTYPES if float_only else DTYPES), label=f"{name}.dtype")
    requires_grad = dtype in FLOAT_DTYPES and draw(st.booleans(), label=f"{name}.requires_grad")
    return TensorInput(
        name=name,
        shape=draw(shapes(), label=f"{name}.shape"),
        dtype=dtype,
        device=device if device is not None else draw(devices(), label=f"{name}.device"),
        requires_grad=requires_grad,
    )


def parameters(name: str, device: str) -> st.SearchStrategy[TensorInput]:
    # nn.Parameter requires grad by default, and only floating tensors can.
    return tensor_inputs(name, device=device, float_only=True).map(
        lambda t: TensorInput(t.name, t.shape, t.dtype, t.device, True)
    )
