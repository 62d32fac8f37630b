"""A backend that raises at random points and leaves torch's global state changed never makes
one example leak state into the next: grad_mode.isolated sets it back around each side."""

import contextlib

from conformance import grad_mode
from conformance.backends.faulty import Chaotic
from conformance.soak import soak


def test_no_example_leaks_global_state_whatever_the_backend_does():
    r = soak(200, seed=1)
    assert r.examples >= 150 and r.leaks == 0, r.line()
    assert set(r.faults) == set(Chaotic.FAULTS), r.line()  # every fault was tried


def test_without_the_isolation_the_soak_counts_the_leaks(monkeypatch):
    # Planted fault: the runner no longer restores the state (grad mode alone is still set back,
    # by each call's ambient mode).
    monkeypatch.setattr(grad_mode, "isolated", lambda changed=None: contextlib.nullcontext())
    r = soak(200, seed=1)
    assert r.leaks > 0 and {"inference_mode", "autocast", "default_dtype"} <= set(r.leaked), r.line()


def test_restore_sets_back_each_part_and_names_it():
    import torch

    torch._C._set_grad_enabled(True)  # whatever an earlier test's leaked contexts left behind
    before = grad_mode.snapshot()
    cm = torch.inference_mode()
    cm.__enter__()
    torch.set_default_dtype(torch.float64)
    torch.set_autocast_enabled("cpu", True)
    assert set(grad_mode.restore(before)) == {"inference_mode", "grad_enabled", "default_dtype", "autocast"}
    assert grad_mode.snapshot() == before
    del cm
