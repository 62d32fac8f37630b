"""Grad mode and inference mode are restored after every run, whatever the program did."""

import pytest
import torch

from conformance import grad_mode, runner
from conformance.generators import SINGLE_CALL, CallSpec
from conformance.program import Assign, Call, GradRegion, Program, SetGradMode, TensorInput

A = TensorInput("a", (2,), requires_grad=True)
# `a @ a` of two vectors is fine; `t0 @ t0` of a (2,) with a 0-d... we need a raising op:
# matmul of a 1-d tensor with a 0-d one raises in eager.
RAISES = Call("matmul", ("a", "s"))
S = TensorInput("s", ())


@pytest.mark.parametrize("region", ["no_grad", "enable_grad", "set_grad_enabled", "inference_mode"])
def test_state_restored_after_raise_inside_region(region):
    p = Program((A, S), (SetGradMode("torch.set_grad_enabled", False),
                         GradRegion(region, (Assign("t0", RAISES),))), ("t0",))
    before = grad_mode.current()
    side = runner.run(p, None, SINGLE_CALL)
    assert side.calls[0].error is not None and side.calls[0].error.stage == "call"
    assert grad_mode.current() == before


def test_program_leaving_grad_disabled_is_observed_then_undone():
    p = Program((A,), (SetGradMode("torch._C._set_grad_enabled", False), Assign("t0", Call("sin", ("a",)))), ("t0",))
    side = runner.run(p, None, (CallSpec("grad"), CallSpec("no_grad", values_seed=1)))
    assert [c.state_after.grad_enabled for c in side.calls] == [False, False]
    assert torch.is_grad_enabled()


@pytest.mark.parametrize("mode", grad_mode.AMBIENT_MODES)
def test_ambient_modes_are_what_they_say_and_restore(mode):
    with grad_mode.ambient(mode):
        assert torch.is_grad_enabled() == grad_mode.AMBIENT_GRAD_ENABLED[mode]
        assert torch.is_inference_mode_enabled() == (mode == "inference_mode")
    assert torch.is_grad_enabled() and not torch.is_inference_mode_enabled()


def test_unknown_ambient_mode_is_refused():
    with pytest.raises(ValueError, match="unknown ambient grad mode"):
        with grad_mode.ambient("sometimes"):
            pass


def test_set_grad_enabled_calls_are_recorded_in_order():
    log = []
    with grad_mode.recording_set_grad_enabled(log):
        with torch.no_grad():
            with torch.enable_grad():
                pass
    assert log == [False, True, False, True]
    assert torch._C._set_grad_enabled.__name__ == "_set_grad_enabled"
