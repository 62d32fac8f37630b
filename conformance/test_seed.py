"""Fixed examples: the seed example of the feature, and the two cache scenarios of the
upstream discussion (compile under no_grad then call with grad, and the reverse)."""

import pytest

from conformance.check import failure_message, run_example
from conformance.generators.schedules import CallSpec
from conformance.program import Assign, Call, Create, GradRegion, Program, TensorInput

# def fn(x):
#     with torch.no_grad():
#         t0 = torch.ones((3,))
#         y = x * t0
#     return x + y
SEED = Program(
    inputs=(TensorInput("x", (3,), requires_grad=True),),
    body=(
        GradRegion("no_grad", (Assign("t0", Create("ones", (3,))), Assign("y", Call("mul", ("x", "t0"))))),
        Assign("t1", Call("add", ("x", "y"))),
    ),
    returns=("t1",),
)


def test_seed_example_gradient_is_ones(backend):
    import torch

    result = run_example(SEED, backend)
    assert not result.mismatches, failure_message(result)
    # Only the path outside no_grad counts: d(x + stop_grad(x * 1))/dx == 1.
    grad = result.backend.calls[0].grads["x"]
    assert grad is not None, "x.grad is None after backward"
    cot = result.eager.calls[0].grads["x"].value  # eager: the cotangent itself
    torch.testing.assert_close(grad.value, cot)


@pytest.mark.parametrize("modes", [("no_grad", "grad"), ("grad", "no_grad")], ids=["no_grad-then-grad", "grad-then-no_grad"])
def test_other_ambient_mode_recompiles(backend, modes):
    schedule = tuple(CallSpec(ambient=m, values_seed=i) for i, m in enumerate(modes))
    result = run_example(SEED, backend, schedule)
    assert not result.mismatches, failure_message(result)
    if result.backend.cache is not None:
        assert result.backend.cache.misses == 2, f"expected 2 compilations, got {result.backend.cache}"
    eager_flags = [c.outputs[0].requires_grad for c in result.eager.calls]
    assert eager_flags == [m == "grad" for m in modes]
